#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMSNorm backward, per row (r = rstd saved by the forward, C = cols):
//   dx = r * (w*dy - x * r^2 * mean(w*dy*x))        (default: one workgroup per row)
//   dw[c] += sum over rows of dy[row, c] * x[row, c] * r[row]   (GRAD_W: one thread column per c)
// dy, x, dx are f32; W_T is the weight's storage type. kAccumulate (constant 1): dx += instead of =, for the
// residual stream's gradient, which takes the norm's dx as a sum (model/layer.cpp: one dispatch, not two).
// kSecondDy (constant 2): the gradient arrives in two parts, dy + dy2 (binding 5; gate_proj's and up_proj's dx
// products, written side by side). kF16Copy (constant 3): dx, as stored, also as f16 in binding 6, for the
// tensor-core products that read it next (ops/matmul.cpp's remembered copies). kDySlices, kDy2Slices (constants 4,
// 6; their lanes 5, 7): dy, dy2 are a split product's partial sums [slices, rows, cols] (ops::SplitSums), added up
// here as its own reduce would (the same bits), one stage fewer. Each invocation keeps the row's gradient values it reads
// (up to kKept of them) for the second pass. The GRAD_W variant sums the rows in a fixed
// order (8 strided lanes, then the lanes in order), so dw is deterministic without atomics.
#include "common/types.glsl"

layout(push_constant) uniform Params { uint rows; uint cols; } p;

#ifndef GRAD_W
#include "common/reduce.glsl"
#include "common/split_sums.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer W { STORE(W_T) w[]; };
layout(binding = 3) readonly buffer Rstd { float rstd[]; };
layout(binding = 4) buffer DX { float dx[]; };
layout(binding = 5) readonly buffer DY2 { float dy2[]; };
layout(binding = 6) writeonly buffer DX16 { float16_t dx16[]; };
layout(constant_id = 1) const uint kAccumulate = 0u;
layout(constant_id = 2) const uint kSecondDy = 0u;
layout(constant_id = 3) const uint kF16Copy = 0u;
layout(constant_id = 4) const uint kDySlices = 0u;
layout(constant_id = 5) const uint kDyLanes = 1u;
layout(constant_id = 6) const uint kDy2Slices = 0u;
layout(constant_id = 7) const uint kDy2Lanes = 1u;
const uint kKept = 16u;

DEFINE_SPLIT_SUM(dy_sum, dy, kDySlices, kDyLanes)
DEFINE_SPLIT_SUM(dy2_sum, dy2, kDy2Slices, kDy2Lanes)
float dy_at(const in uint i) { return kDySlices == 0u ? dy[i] : dy_sum(i, p.rows * p.cols); }
float dy2_at(const in uint i) { return kDy2Slices == 0u ? dy2[i] : dy2_sum(i, p.rows * p.cols); }
float grad_at(const in uint i) { return kSecondDy != 0u ? dy_at(i) + dy2_at(i) : dy_at(i); }

// dx at column c from its gradient value g.
void store_dx(const in uint base, const in uint c, const in float g_in, const in float r, const in float k) {
  const float g = r * (TO_F32(W_T, w[c]) * g_in) - k * x[base + c];
  const float v = kAccumulate != 0u ? dx[base + c] + g : g;
  dx[base + c] = v;
  if (kF16Copy != 0u) dx16[base + c] = float16_t(v);
}

void main() {
  const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x, tail = tid + kKept * threads;
  float kept[kKept];  // (indexed by constants in unrolled loops: registers)
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.cols;
    const float r = rstd[row];
    float sum_gx = 0.0;
    [[unroll]] for (uint j = 0u; j < kKept; ++j) {
      const uint c = tid + j * threads;
      if (c < p.cols) {
        kept[j] = grad_at(base + c);
        sum_gx += TO_F32(W_T, w[c]) * kept[j] * x[base + c];
      }
    }
    for (uint c = tail; c < p.cols; c += threads) sum_gx += TO_F32(W_T, w[c]) * grad_at(base + c) * x[base + c];
    const float k = r * r * r * (workgroup_sum(sum_gx) / float(p.cols));
    [[unroll]] for (uint j = 0u; j < kKept; ++j)
      if (tid + j * threads < p.cols) store_dx(base, tid + j * threads, kept[j], r, k);
    for (uint c = tail; c < p.cols; c += threads) store_dx(base, c, grad_at(base + c), r, k);
  }
}

#else
const uint kCols = 32u, kLanes = 8u;  // a workgroup covers 32 columns; 8 lanes split the rows
layout(local_size_x = 32, local_size_y = 8) in;

layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer Rstd { float rstd[]; };
layout(binding = 3) buffer DW { float dw[]; };

shared float lane_sums[kLanes][kCols];

void main() {
  const uint lx = gl_LocalInvocationID.x, lane = gl_LocalInvocationID.y;
  for (uint block = gl_WorkGroupID.x; block * kCols < p.cols; block += gl_NumWorkGroups.x) {
    const uint c = block * kCols + lx;
    float acc = 0.0;
    if (c < p.cols)
      for (uint row = lane; row < p.rows; row += kLanes) acc += dy[row * p.cols + c] * x[row * p.cols + c] * rstd[row];
    lane_sums[lane][lx] = acc;
    barrier();
    if (lane == 0u && c < p.cols) {
      float total = 0.0;
      for (uint i = 0u; i < kLanes; ++i) total += lane_sums[i][lx];
      dw[c] += total;
    }
    barrier();  // the sums are read before the next block overwrites them
  }
}
#endif
