#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm (HF Qwen2/Llama): per row of x viewed as [rows, C],
//   rstd = 1 / sqrt(mean(x^2) + eps),  y = (x * rstd) * w
// normalised in f32, then multiplied by the weight. rstd is saved (f32) for the backward.
// X_T: storage type of x and y (Y_T, when given, of y: the f32 residual stream normalised into f16
// matmul inputs); W_T: of w. One workgroup per row, grid-stride over rows. kAdd (constant 1): x is the sum
// a + x2 of a residual add (binding 4), also written out (binding 5), so that the add needs no pass of its own.
// The sum is the same f32 add ops::add_forward makes.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;
#ifndef Y_T
#define Y_T X_T
#endif

layout(binding = 0) readonly buffer X { STORE(X_T) x[]; };
layout(binding = 1) readonly buffer W { STORE(W_T) w[]; };
layout(binding = 2) writeonly buffer Y { STORE(Y_T) y[]; };
layout(binding = 3) writeonly buffer Rstd { float rstd[]; };
layout(binding = 4) readonly buffer X2 { STORE(X_T) x2[]; };
layout(binding = 5) writeonly buffer Sum { STORE(X_T) sum[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float eps; } p;
layout(constant_id = 1) const uint kAdd = 0u;

float x_at(const in uint i) {
  return kAdd != 0u ? TO_F32(X_T, FROM_F32(X_T, TO_F32(X_T, x[i]) + TO_F32(X_T, x2[i]))) : TO_F32(X_T, x[i]);
}

void main() {
  const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.cols;
    float sum_sq = 0.0;
    for (uint c = tid; c < p.cols; c += threads) {
      float v = x_at(base + c);
      if (kAdd != 0u) sum[base + c] = FROM_F32(X_T, v);
      sum_sq += v * v;
    }
    const float r = 1.0 / sqrt(workgroup_sum(sum_sq) / float(p.cols) + p.eps);
    for (uint c = tid; c < p.cols; c += threads)
      y[base + c] = FROM_F32(Y_T, (x_at(base + c) * r) * TO_F32(W_T, w[c]));
    if (tid == 0u) rstd[row] = r;
  }
}
