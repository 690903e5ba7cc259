#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm: per row of x viewed as [rows, C],
//   mean = sum(x) / C,  rstd = 1 / sqrt(sum((x - mean)^2) / C + eps),  y = ((x - mean) * rstd) * w + b
// (two passes for the variance: no cancellation). mean and rstd are saved (f32) for the backward.
// X_T: storage type of x and y; W_T: of w and b. One workgroup per row, grid-stride over rows.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE(X_T) x[]; };
layout(binding = 1) readonly buffer W { STORE(W_T) w[]; };
layout(binding = 2) readonly buffer B { STORE(W_T) b[]; };
layout(binding = 3) writeonly buffer Y { STORE(X_T) y[]; };
layout(binding = 4) writeonly buffer Mean { float mean[]; };
layout(binding = 5) writeonly buffer Rstd { float rstd[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float eps; } p;

void main() {
  const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.cols;
    float sum = 0.0;
    for (uint c = tid; c < p.cols; c += threads) sum += TO_F32(X_T, x[base + c]);
    const float m = workgroup_sum(sum) / float(p.cols);
    float sum_sq = 0.0;
    for (uint c = tid; c < p.cols; c += threads) {
      float d = TO_F32(X_T, x[base + c]) - m;
      sum_sq += d * d;
    }
    const float r = 1.0 / sqrt(workgroup_sum(sum_sq) / float(p.cols) + p.eps);
    for (uint c = tid; c < p.cols; c += threads) {
      float xhat = (TO_F32(X_T, x[base + c]) - m) * r;
      y[base + c] = FROM_F32(X_T, xhat * TO_F32(W_T, w[c]) + TO_F32(W_T, b[c]));
    }
    if (tid == 0u) {
      mean[row] = m;
      rstd[row] = r;
    }
  }
}
