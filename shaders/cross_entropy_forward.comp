#version 450
#extension GL_GOOGLE_include_directive : require
// Per row of logits [rows, cols]: lse = log(sum_c exp(logits[c])), row_loss = lse - logits[target]
// for a counted row (0 <= target < cols), else 0. Targets past the vocabulary are ignored here: the
// host cannot see them, and they must not index out of the row. One workgroup per row (a row-stride
// loop takes the rest): an online (max, sum of exp) per thread, merged by workgroup_max/workgroup_sum.
// cross_entropy_reduce.comp then averages row_loss into the loss.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Logits { STORE(T) logits[]; };
layout(binding = 1) readonly buffer Targets { int targets[]; };
layout(binding = 2) writeonly buffer Lse { float lse[]; };
layout(binding = 3) writeonly buffer RowLoss { float row_loss[]; };
layout(push_constant) uniform Params { uint rows; uint cols; } p;

const float kLowest = -3.402823466e38;  // below every finite logit; exp(kLowest - m) is 0

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    float m = kLowest, s = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float v = TO_F32(T, logits[base + c]);
      if (v > m) {
        s = s * exp(m - v) + 1.0;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
    float row_max = workgroup_max(m);
    float row_lse = row_max + log(workgroup_sum(s * exp(m - row_max)));
    if (gl_LocalInvocationID.x == 0u) {
      int target = targets[row];
      bool counted = target >= 0 && uint(target) < p.cols;
      lse[row] = row_lse;
      row_loss[row] = counted ? row_lse - TO_F32(T, logits[base + uint(target)]) : 0.0;
    }
  }
}
