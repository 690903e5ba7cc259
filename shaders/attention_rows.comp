#version 450
#extension GL_GOOGLE_include_directive : require
// The row-wise steps of attention computed through matrix products (ops/attention.h, training shapes:
// S = T, causal). One workgroup per score row r = (b·H + h)·T + t of the [B, H, T, T] f32 matrices; the
// row's valid columns are j <= t. Modes:
//   PROBS_FORWARD:  s = scores (already scaled) -> lse[b,h,t] = log Σ_{j<=t} exp(s_j), p_j = exp(s_j - lse)
//                   written over the scores, 0 for j > t.
//   PROBS_FROM_LSE: the same p from the saved lse (the backward recomputes the scores).
//   DSCORES:        delta = do[b,t,h,:]·o[b,t,h,:]; ds_j = p_j·(dp_j - delta) written over dp, 0 for j > t.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) buffer Rows { float rows_[]; };        // scores -> p, or dp -> ds
layout(binding = 1) buffer Lse { float lse[]; };           // [B, H, T]
layout(binding = 2) readonly buffer Probs { float probs[]; };  // DSCORES: p
layout(binding = 3) readonly buffer DO { float do_[]; };       // DSCORES: [B, T, H, D]
layout(binding = 4) readonly buffer O { float o[]; };          // DSCORES: [B, T, H, D]
layout(push_constant) uniform Params {
  uint rows;  // B·H·T
  uint T, H, D;
} p;

const float kLowest = -3.402823466e38;

void main() {
  for (uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; r < p.rows;
       r += gl_NumWorkGroups.x * gl_NumWorkGroups.y) {
    const uint t = r % p.T, bh = r / p.T, base = r * p.T, valid = t + 1u;
#if defined(PROBS_FORWARD)
    float m = kLowest, s = 0.0;
    for (uint j = gl_LocalInvocationID.x; j < valid; j += 256u) {
      float v = rows_[base + j];
      if (v > m) {
        s = s * exp(m - v) + 1.0;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
    const float row_max = workgroup_max(m);
    const float l = row_max + log(workgroup_sum(s * exp(m - row_max)));
    if (gl_LocalInvocationID.x == 0u) lse[r] = l;
#elif defined(PROBS_FROM_LSE)
    const float l = lse[r];
#endif
#if defined(PROBS_FORWARD) || defined(PROBS_FROM_LSE)
    for (uint j = gl_LocalInvocationID.x; j < p.T; j += 256u) rows_[base + j] = j < valid ? exp(rows_[base + j] - l) : 0.0;
#else
    const uint b = bh / p.H, h = bh % p.H, o_base = ((b * p.T + t) * p.H + h) * p.D;
    float part = 0.0;
    for (uint d = gl_LocalInvocationID.x; d < p.D; d += 256u) part += do_[o_base + d] * o[o_base + d];
    const float delta = workgroup_sum(part);
    for (uint j = gl_LocalInvocationID.x; j < p.T; j += 256u)
      rows_[base + j] = j < valid ? probs[base + j] * (rows_[base + j] - delta) : 0.0;
#endif
  }
}
