#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMSNorm (HF Qwen2/Llama): per row of x viewed as [rows, C],
//   rstd = 1 / sqrt(mean(x^2) + eps),  y = (x * rstd) * w
// normalised in f32, then multiplied by the weight. rstd is saved (f32) for the backward.
// X_T: storage type of x and y (Y_T, when given, of y: the f32 residual stream normalised into f16
// matmul inputs); W_T: of w. One workgroup per row, grid-stride over rows. kAdd (constant 1): x is the sum
// a + x2 of a residual add (binding 4), also written out (binding 5), so that the add needs no pass of its own;
// kAdd = 2 writes it twice, the second time into binding 6 (training: the next residual add's starting value,
// which the down product then adds into). The sum is the same f32 add ops::add_forward makes. kSlices (constant 2,
// with kAdd; kLanes, constant 3, their grouping): x2 is a split product's partial sums [kSlices, rows, cols]
// (ops::SplitSums), added up here as the product's own reduce would (the same bits), one stage fewer.
// Each invocation keeps the row's values it reads (up to kKept of them) for the second pass. With kAdd, x may be
// a (bindings 5 and 0 one buffer: prefill updates the stream in place): each invocation reads its elements before it
// writes them, and past kKept reads its own sums back.
#include "common/types.glsl"
#include "common/reduce.glsl"
#include "common/split_sums.glsl"
layout(local_size_x_id = 0) in;
#ifndef Y_T
#define Y_T X_T
#endif

layout(binding = 0) readonly buffer X { STORE(X_T) x[]; };
layout(binding = 1) readonly buffer W { STORE(W_T) w[]; };
layout(binding = 2) writeonly buffer Y { STORE(Y_T) y[]; };
layout(binding = 3) writeonly buffer Rstd { float rstd[]; };
layout(binding = 4) readonly buffer X2 { STORE(X_T) x2[]; };
layout(binding = 5) buffer Sum { STORE(X_T) sum[]; };
layout(binding = 6) writeonly buffer Sum2 { STORE(X_T) sum2[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float eps; } p;
layout(constant_id = 1) const uint kAdd = 0u;
layout(constant_id = 2) const uint kSlices = 0u;
layout(constant_id = 3) const uint kLanes = 1u;
const uint kKept = 16u;

DEFINE_SPLIT_SUM(x2_sum, x2, kSlices, kLanes)
float x2_at(const in uint i) { return kSlices == 0u ? TO_F32(X_T, x2[i]) : x2_sum(i, p.rows * p.cols); }

float x_at(const in uint i) {
  return kAdd != 0u ? TO_F32(X_T, FROM_F32(X_T, TO_F32(X_T, x[i]) + x2_at(i))) : TO_F32(X_T, x[i]);
}

// First pass over column c: the value (the sum, with kAdd, written out), its square added to sum_sq.
float first_pass(const in uint base, const in uint c, inout float sum_sq) {
  const float v = x_at(base + c);
  if (kAdd != 0u) sum[base + c] = FROM_F32(X_T, v);
  if (kAdd == 2u) sum2[base + c] = FROM_F32(X_T, v);
  sum_sq += v * v;
  return v;
}

void main() {
  const uint tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x, tail = tid + kKept * threads;
  float kept[kKept];  // (indexed by constants in unrolled loops: registers)
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.cols;
    float sum_sq = 0.0;
    [[unroll]] for (uint j = 0u; j < kKept; ++j)
      if (tid + j * threads < p.cols) kept[j] = first_pass(base, tid + j * threads, sum_sq);
    for (uint c = tail; c < p.cols; c += threads) first_pass(base, c, sum_sq);
    const float r = 1.0 / sqrt(workgroup_sum(sum_sq) / float(p.cols) + p.eps);
    [[unroll]] for (uint j = 0u; j < kKept; ++j) {
      const uint c = tid + j * threads;
      if (c < p.cols) y[base + c] = FROM_F32(Y_T, (kept[j] * r) * TO_F32(W_T, w[c]));
    }
    // (with kAdd the sum this invocation wrote, not a + x2 again: x may be a, the stream updated in place)
    for (uint c = tail; c < p.cols; c += threads) {
      const float v = kAdd != 0u ? TO_F32(X_T, sum[base + c]) : x_at(base + c);
      y[base + c] = FROM_F32(Y_T, (v * r) * TO_F32(W_T, w[c]));
    }
    if (tid == 0u) rstd[row] = r;
  }
}
