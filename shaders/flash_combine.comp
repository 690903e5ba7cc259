#version 450
#extension GL_GOOGLE_include_directive : require
// The split flash forward's partials added up (ops/attention_flash.cpp; shaders/flash_attention_cm2.comp with
// SPLIT): for query row (b, t) of head h, over the splits s with row maximum m_s, sum of exponentials l_s and
// unnormalized output acc_s,
//   M = max m_s, L = Σ l_s·exp(m_s - M), o[b, t, h, d] = Σ acc_s[d]·exp(m_s - M) / L, lse[b, h, t] = M + log L.
// part [splits, B, H, T, D] and ml [splits, B, H, T, 2] f32; o [B, T, H, D] in T (f32 or f16); lse [B, H, T] f32.
// One invocation per output element; the one with d = 0 writes the row's lse.
#include "common/types.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Part { float part[]; };
layout(binding = 1) readonly buffer Ml { float ml[]; };
layout(binding = 2) writeonly buffer O { STORE(T) o[]; };
layout(binding = 3) writeonly buffer Lse { float lse[]; };
layout(push_constant) uniform Params {
  uint total;  // B·H·T·D
  uint B, T, H, D, splits;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u; i < p.total;
       i += gl_NumWorkGroups.x * gl_NumWorkGroups.y * 256u) {
    const uint d = i % p.D, row = i / p.D;  // row = (b·H + h)·T + t
    const uint t = row % p.T, h = (row / p.T) % p.H, b = row / (p.T * p.H);
    const uint rows = p.B * p.H * p.T;
    float M = -3.0e38;
    for (uint s = 0u; s < p.splits; ++s) M = max(M, ml[(s * rows + row) * 2u]);
    float L = 0.0, acc = 0.0;
    for (uint s = 0u; s < p.splits; ++s) {
      const float w = exp(ml[(s * rows + row) * 2u] - M);
      L += ml[(s * rows + row) * 2u + 1u] * w;
      acc += part[(s * rows + row) * p.D + d] * w;
    }
    o[((b * p.T + t) * p.H + h) * p.D + d] = FROM_F32(T, L > 0.0 ? acc / L : 0.0);
    if (d == 0u) lse[row] = M + log(L);
  }
}
