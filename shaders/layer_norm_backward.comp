#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm backward, per row (m, r = mean, rstd saved by the forward; xhat = (x - m) * r; g = w * dy):
//   dx = r * (g - mean(g) - xhat * mean(g * xhat))           (default: one workgroup per row)
//   dw[c] += sum over rows of dy * xhat,  db[c] += sum over rows of dy   (GRAD_W: per column)
// dy, x, dx are f32; W_T is the weight's storage type. The GRAD_W variant sums the rows in a fixed
// order (8 strided lanes, then the lanes in order), so dw and db are deterministic without atomics.
#include "common/types.glsl"

layout(push_constant) uniform Params { uint rows; uint cols; } p;

#ifndef GRAD_W
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer W { STORE(W_T) w[]; };
layout(binding = 3) readonly buffer Mean { float mean[]; };
layout(binding = 4) readonly buffer Rstd { float rstd[]; };
layout(binding = 5) writeonly buffer DX { float dx[]; };

void main() {
  const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.cols;
    const float m = mean[row], r = rstd[row];
    float sum_g = 0.0, sum_gxhat = 0.0;
    for (uint c = tid; c < p.cols; c += threads) {
      float g = TO_F32(W_T, w[c]) * dy[base + c];
      sum_g += g;
      sum_gxhat += g * ((x[base + c] - m) * r);
    }
    const float mean_g = workgroup_sum(sum_g) / float(p.cols);
    const float mean_gxhat = workgroup_sum(sum_gxhat) / float(p.cols);
    for (uint c = tid; c < p.cols; c += threads) {
      float g = TO_F32(W_T, w[c]) * dy[base + c];
      float xhat = (x[base + c] - m) * r;
      dx[base + c] = r * (g - mean_g - xhat * mean_gxhat);
    }
  }
}

#else
const uint kCols = 32u, kLanes = 8u;  // a workgroup covers 32 columns; 8 lanes split the rows
layout(local_size_x = 32, local_size_y = 8) in;

layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer Mean { float mean[]; };
layout(binding = 3) readonly buffer Rstd { float rstd[]; };
layout(binding = 4) buffer DW { float dw[]; };
layout(binding = 5) buffer DB { float db[]; };

shared float lane_sums_w[kLanes][kCols];
shared float lane_sums_b[kLanes][kCols];

void main() {
  const uint lx = gl_LocalInvocationID.x, lane = gl_LocalInvocationID.y;
  for (uint block = gl_WorkGroupID.x; block * kCols < p.cols; block += gl_NumWorkGroups.x) {
    const uint c = block * kCols + lx;
    float acc_w = 0.0, acc_b = 0.0;
    if (c < p.cols)
      for (uint row = lane; row < p.rows; row += kLanes) {
        float g = dy[row * p.cols + c];
        acc_w += g * ((x[row * p.cols + c] - mean[row]) * rstd[row]);
        acc_b += g;
      }
    lane_sums_w[lane][lx] = acc_w;
    lane_sums_b[lane][lx] = acc_b;
    barrier();
    if (lane == 0u && c < p.cols) {
      float total_w = 0.0, total_b = 0.0;
      for (uint i = 0u; i < kLanes; ++i) {
        total_w += lane_sums_w[i][lx];
        total_b += lane_sums_b[i][lx];
      }
      dw[c] += total_w;
      db[c] += total_b;
    }
    barrier();  // the sums are read before the next block overwrites them
  }
}
#endif
