#version 450
#extension GL_GOOGLE_include_directive : require
// loss = {sum of row_loss over counted rows / count, count}, count = the rows with 0 <= target < cols
// (mean 0 when count = 0). One workgroup: each thread sums a fixed stride of rows, then workgroup_sum,
// so the order (and the result) is the same on every run.
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer RowLoss { float row_loss[]; };
layout(binding = 1) readonly buffer Targets { int targets[]; };
layout(binding = 2) writeonly buffer Loss { float loss[]; };
layout(push_constant) uniform Params { uint rows; uint cols; } p;

void main() {
  float sum = 0.0, count = 0.0;
  for (uint row = gl_LocalInvocationID.x; row < p.rows; row += gl_WorkGroupSize.x) {
    int target = targets[row];
    if (target >= 0 && uint(target) < p.cols) {
      sum += row_loss[row];
      count += 1.0;
    }
  }
  sum = workgroup_sum(sum);
  count = workgroup_sum(count);
  if (gl_LocalInvocationID.x == 0u) {
    loss[0] = count > 0.0 ? sum / count : 0.0;
    loss[1] = count;
  }
}
