#version 450
#extension GL_GOOGLE_include_directive : require
// dlogits[c] = dloss_scale * (exp(logits[c] - lse) - (c == target)) / count for a counted row
// (0 <= target < cols), 0 for other rows and everywhere when count = 0; count = loss[1], as written by
// cross_entropy_reduce.comp. No reductions: one workgroup per row (a row-stride loop takes the rest).
// dlogits may alias logits (same dtype): each element is read and then written by the same invocation.
// softcap > 0: the logits are capped ones, l = c·tanh(z / c) (ops::softcap_forward), and the gradient is the
// raw logits z's: dlogits = g·(1 - (l / c)²), since dl/dz = 1 - tanh²(z / c).
// V8 (f16 logits and dlogits): rows whose length is a multiple of 8 go eight values a thread (common/f16x8.glsl).
#include "common/types.glsl"
#ifdef V8
#include "common/f16x8.glsl"
#endif
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Logits { STORE(T) logits[]; };
layout(binding = 1) readonly buffer Targets { int targets[]; };
layout(binding = 2) readonly buffer Lse { float lse[]; };
layout(binding = 3) readonly buffer Loss { float loss[]; };
layout(binding = 4) writeonly buffer DLogits { STORE(D) dlogits[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float dloss_scale; float softcap; } p;
#ifdef V8
layout(binding = 0) readonly buffer Logits8 { uvec4 logits8[]; };
layout(binding = 4) writeonly buffer DLogits8 { uvec4 dlogits8[]; };
#endif

// The gradient at column c of a counted row, from its logit l.
float grad(const in float l, const in uint c, const in int target, const in float row_lse, const in float row_scale) {
  float prob = exp(l - row_lse);
  float g = row_scale * (prob - (uint(target) == c ? 1.0 : 0.0));
  if (p.softcap > 0.0) {
    float t = l / p.softcap;
    g *= 1.0 - t * t;
  }
  return g;
}

void main() {
  float count = loss[1];
  float row_scale = count > 0.0 ? p.dloss_scale / count : 0.0;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    int target = targets[row];
    bool counted = target >= 0 && uint(target) < p.cols;
    float row_lse = lse[row];
#ifdef V8
    if (p.cols % 8u == 0u) {
      const uint base8 = base / 8u;
      for (uint c8 = gl_LocalInvocationID.x; c8 < p.cols / 8u; c8 += gl_WorkGroupSize.x) {
        uvec4 r = uvec4(0u);  // +0.0 in f16
        if (counted) {
          const uvec4 v = logits8[base8 + c8];
          [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            const vec2 l = v8_pair(v, k);
            const uint c = c8 * 8u + 2u * k;
            r[k] = v8_pack(grad(l.x, c, target, row_lse, row_scale), grad(l.y, c + 1u, target, row_lse, row_scale));
          }
        }
        dlogits8[base8 + c8] = r;
      }
      continue;
    }
#endif
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float g = 0.0;
      if (counted) g = grad(TO_F32(T, logits[base + c]), c, target, row_lse, row_scale);
      dlogits[base + c] = FROM_F32(D, g);
    }
  }
}
