#version 450
#extension GL_GOOGLE_include_directive : require
// Decoding attention over a KV cache, split over the keys (flash-decoding) so that a handful of query
// rows still fill the GPU. Same math as shaders/attention.comp with past read from the device:
// query row (b, t, h) sees keys j <= past + t. Two kernels:
//   PARTIAL: workgroup (row, s) takes keys [s * WG, s * WG + WG) ∩ [0, n_keys): thread j scores key j,
//     m = max score, l = sum exp(s_j - m), o[d] = sum exp(s_j - m) v_j[d]; writes (m, l, o) to scratch
//     [rows, splits, D + 2] (l = 0 when the split holds no key).
//   COMBINE: workgroup per row: M = max m_s, L = sum l_s exp(m_s - M), o = sum o_s exp(m_s - M) / L.
#include "common/types.glsl"
#include "common/reduce.glsl"

#define WG 64
#define MAX_D 256
layout(local_size_x = WG) in;

layout(binding = 0) readonly buffer Q { STORE(T) q[]; };
layout(binding = 1) readonly buffer K { STORE(T) k[]; };
layout(binding = 2) readonly buffer V { STORE(T) v[]; };
layout(binding = 3) buffer O { STORE(T) o[]; };
layout(binding = 4) buffer Scratch { float part[]; };
layout(binding = 5) readonly buffer Past { int past_buf[]; };
layout(push_constant) uniform Params { uint B, T, S, H, KV, D; float scale; uint splits; } p;

shared float q_row[MAX_D];
shared float probs[WG];

void main() {
  const uint row = gl_WorkGroupID.x;  // = (b * T + t) * H + h
  const uint tid = gl_LocalInvocationID.x;
  const uint h = row % p.H, t = (row / p.H) % p.T, b = row / (p.H * p.T);
  const uint n_keys = min(uint(max(past_buf[0], 0)) + t + 1u, p.S);
#if defined(PARTIAL)
  const uint s = gl_WorkGroupID.y;
  const uint g = h / (p.H / p.KV);
  const uint key_stride = p.KV * p.D, key0 = (b * p.S * p.KV + g) * p.D;
  const uint base = (row * p.splits + s) * (p.D + 2u);
  const uint first = s * WG;
  if (first >= n_keys) {  // uniform: nothing to see here
    if (tid == 0u) part[base + p.D + 1u] = 0.0;
    return;
  }
  for (uint d = tid; d < p.D; d += WG) q_row[d] = TO_F32(T, q[row * p.D + d]);
  barrier();
  const uint j = first + tid;
  const bool live = j < n_keys;
  float score = -3.0e38;
  if (live) {
    precise vec4 acc = vec4(0.0);
    for (uint i = 0u; i < p.D; ++i) acc[i & 3u] += q_row[i] * TO_F32(T, k[key0 + j * key_stride + i]);
    score = p.scale * ((acc.x + acc.y) + (acc.z + acc.w));
  }
  const float m = workgroup_max(score);
  const float e = live ? exp(score - m) : 0.0;
  const float l = workgroup_sum(e);
  probs[tid] = e;
  barrier();
  const uint count = min(uint(WG), n_keys - first);
  for (uint d = tid; d < p.D; d += WG) {
    float a = 0.0;
    for (uint jj = 0u; jj < count; ++jj) a += probs[jj] * TO_F32(T, v[key0 + (first + jj) * key_stride + d]);
    part[base + d] = a;
  }
  if (tid == 0u) {
    part[base + p.D] = m;
    part[base + p.D + 1u] = l;
  }
#else  // COMBINE
  const uint used = min(p.splits, (n_keys + WG - 1u) / WG);
  float mx = -3.0e38;
  for (uint s = 0u; s < used; ++s) mx = max(mx, part[(row * p.splits + s) * (p.D + 2u) + p.D]);
  float total = 0.0;
  for (uint s = 0u; s < used; ++s) {
    const uint base = (row * p.splits + s) * (p.D + 2u);
    total += part[base + p.D + 1u] * exp(part[base + p.D] - mx);
  }
  for (uint d = tid; d < p.D; d += WG) {
    float acc = 0.0;
    for (uint s = 0u; s < used; ++s) {
      const uint base = (row * p.splits + s) * (p.D + 2u);
      acc += part[base + d] * exp(part[base + p.D] - mx);
    }
    o[row * p.D + d] = FROM_F32(T, acc / total);
  }
#endif
}
