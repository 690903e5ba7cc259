#version 450
#extension GL_GOOGLE_include_directive : require
// idx[row] = the first c with x[row, c] == max_c x[row, c] (ties go to the lowest index, as
// torch.argmax). One workgroup per row (a row-stride loop takes the rest). Each thread keeps its first
// maximum; the workgroup takes the largest value, then the lowest index holding it, as a max over
// -index (exact in f32 since cols <= 2^24, checked by the host). NaN inputs are not special-cased.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE(T) x[]; };
layout(binding = 1) writeonly buffer Idx { int idx[]; };
layout(push_constant) uniform Params { uint rows; uint cols; } p;

const uint kNone = 0xffffffffu;

void main() {
  const float neg_inf = uintBitsToFloat(0xff800000u);
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    float best = neg_inf;
    uint best_c = kNone;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float v = TO_F32(T, x[base + c]);
      if (best_c == kNone || v > best) {
        best = v;
        best_c = c;
      }
    }
    float row_max = workgroup_max(best);
    float key = best_c != kNone && best == row_max ? -float(best_c) : neg_inf;
    float first = -workgroup_max(key);
    if (gl_LocalInvocationID.x == 0u) idx[row] = int(first);
  }
}
