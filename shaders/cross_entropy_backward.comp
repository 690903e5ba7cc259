#version 450
#extension GL_GOOGLE_include_directive : require
// dlogits[c] = dloss_scale * (exp(logits[c] - lse) - (c == target)) / count for a counted row
// (0 <= target < cols), 0 for other rows and everywhere when count = 0; count = loss[1], as written by
// cross_entropy_reduce.comp. No reductions: one workgroup per row (a row-stride loop takes the rest).
// dlogits may alias logits (same dtype): each element is read and then written by the same invocation.
// softcap > 0: the logits are capped ones, l = c·tanh(z / c) (ops::softcap_forward), and the gradient is the
// raw logits z's: dlogits = g·(1 - (l / c)²), since dl/dz = 1 - tanh²(z / c).
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Logits { STORE(T) logits[]; };
layout(binding = 1) readonly buffer Targets { int targets[]; };
layout(binding = 2) readonly buffer Lse { float lse[]; };
layout(binding = 3) readonly buffer Loss { float loss[]; };
layout(binding = 4) writeonly buffer DLogits { STORE(D) dlogits[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float dloss_scale; float softcap; } p;

void main() {
  float count = loss[1];
  float row_scale = count > 0.0 ? p.dloss_scale / count : 0.0;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    int target = targets[row];
    bool counted = target >= 0 && uint(target) < p.cols;
    float row_lse = lse[row];
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float g = 0.0;
      if (counted) {
        float l = TO_F32(T, logits[base + c]);
        float prob = exp(l - row_lse);
        g = row_scale * (prob - (uint(target) == c ? 1.0 : 0.0));
        if (p.softcap > 0.0) {
          float t = l / p.softcap;
          g *= 1.0 - t * t;
        }
      }
      dlogits[base + c] = FROM_F32(D, g);
    }
  }
}
