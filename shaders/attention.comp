#version 450
#extension GL_GOOGLE_include_directive : require
// Causal grouped-query attention forward. One workgroup per query row (b, t, h); its kv head is
// g = h / (H / KV) and it sees keys j <= past + t (past = S - T):
//   s_j = scale * q[b,t,h,:] . k[b,j,g,:]
//   o[b,t,h,:] = sum_j exp(s_j - lse) * v[b,j,g,:],   lse[b,h,t] = log sum_j exp(s_j)
// Keys are visited in chunks of WG: each thread scores one key of the chunk, then the workgroup folds
// the chunk into a running max m, sum l and output accumulator (online softmax: the accumulator is
// rescaled by exp(m_old - m_new) when the max grows). Shared memory holds q and one chunk of
// probabilities, so any S works. Thread `tid` owns output dims d = tid + WG * i (D <= MAX_D).
#include "common/types.glsl"
#include "common/reduce.glsl"

#define WG 64
#define MAX_D 256
#define DIMS_PER_THREAD (MAX_D / WG)
layout(local_size_x = WG) in;

layout(binding = 0) readonly buffer Q { STORE(T) q[]; };
layout(binding = 1) readonly buffer K { STORE(T) k[]; };
layout(binding = 2) readonly buffer V { STORE(T) v[]; };
layout(binding = 3) writeonly buffer O { STORE(T) o[]; };
layout(binding = 4) writeonly buffer Lse { float lse[]; };
// With past_on_device, k and v are KV caches of capacity S (keys past .. past + T - 1 already hold this
// call's tokens) and past = past_buf[0], written by the host before each run of a recorded program; with
// past_on_device = 2 each batch row b is a sequence of its own, past = past_buf[b] (batched generation).
layout(binding = 5) readonly buffer Past { int past_buf[]; };
// window > 0: a sliding window, query t sees only keys past + t - window < j (ops/attention.h).
layout(push_constant) uniform Params { uint B, T, S, H, KV, D; float scale; uint past_on_device; uint window; } p;

// result = sum over i_ < p.D of (A) * (B), with A and B written in terms of i_. Four interleaved partial
// sums: rounding error grows more slowly than in one running sum. `precise` (no fma contraction) makes
// every dot product round the same way. Same as in attention_backward.comp.
#define DOT_D(result, A, B)                                                   \
  {                                                                           \
    precise vec4 part_ = vec4(0.0);                                           \
    for (uint i_ = 0u; i_ < p.D; ++i_) part_[i_ & 3u] += (A) * (B);           \
    result = (part_.x + part_.y) + (part_.z + part_.w);                       \
  }

shared float q_row[MAX_D];
shared float probs[WG];

void main() {
  // Rows are folded into x and y to keep each group count <= 65535.
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // = (b * T + t) * H + h
  if (row >= p.B * p.T * p.H) return;  // uniform across the workgroup
  uint h = row % p.H, t = (row / p.H) % p.T, b = row / (p.H * p.T);
  uint g = h / (p.H / p.KV);
  uint tid = gl_LocalInvocationID.x;
  uint past = p.past_on_device != 0u ? uint(max(past_buf[p.past_on_device == 2u ? b : 0u], 0)) : p.S - p.T;
  uint n_keys = min(past + t + 1u, p.S);         // keys 0 .. past + t
  uint first = p.window != 0u && past + t + 1u > p.window ? past + t + 1u - p.window : 0u;  // (window)
  uint key_stride = p.KV * p.D;                  // from key j to key j + 1 of the same kv head
  uint key0 = (b * p.S * p.KV + g) * p.D;        // key 0 of kv head g

  for (uint d = tid; d < p.D; d += WG) q_row[d] = TO_F32(T, q[row * p.D + d]);
  barrier();

  float m = 0.0, l = 0.0;
  float acc[DIMS_PER_THREAD];
  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) acc[i] = 0.0;

  for (uint c0 = first; c0 < n_keys; c0 += WG) {
    uint j = c0 + tid;
    bool live = j < n_keys;  // masked keys are never read
    float s = -3.0e38;  // below any real score, so it never wins the max
    if (live) {
      uint kj = key0 + j * key_stride;
      float qk;
      DOT_D(qk, q_row[i_], TO_F32(T, k[kj + i_]));
      s = p.scale * qk;
    }
    float chunk_max = workgroup_max(s);  // finite: key c0 is always live
    float m_new = c0 == first ? chunk_max : max(m, chunk_max);
    float alpha = c0 == first ? 0.0 : exp(m - m_new);
    float e = live ? exp(s - m_new) : 0.0;
    l = l * alpha + workgroup_sum(e);
    m = m_new;
    probs[tid] = e;
    barrier();
    uint chunk = min(uint(WG), n_keys - c0);
    for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
      uint d = tid + i * WG;
      if (d >= p.D) break;
      float a = 0.0;  // the chunk's sum on its own, then added: rounding grows more slowly
      for (uint jj = 0u; jj < chunk; ++jj) a += probs[jj] * TO_F32(T, v[key0 + (c0 + jj) * key_stride + d]);
      acc[i] = acc[i] * alpha + a;
    }
    barrier();  // probs is rewritten by the next chunk
  }

  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
    uint d = tid + i * WG;
    if (d < p.D) o[row * p.D + d] = FROM_F32(T, acc[i] / l);
  }
  if (tid == 0u) lse[(b * p.H + h) * p.T + t] = m + log(l);
}
