#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Second pass of a split-K matrix product: C(m, n) = epilogue(Σ_s partial[s](m, n)), deterministic (unlike
// atomics). The partial sums [S, M, N] f32 come in binding 0 (A), S in p.K; the epilogue (alpha, bias, LoRA
// term, accumulation into C) is shaders/matmul.comp's.
// kLanes invocations share an output: lane l adds slices l, l + kLanes, ..., then the lanes' sums are added
// in a fixed tree in shared memory. LoRA's weight gradients have few outputs (r × 896 at 0.5B) and up to 256
// slices: one invocation each summing them all took 24 µs a reduce at 0.5B B8 on the H100 (session 15), on 28
// workgroups. Many outputs (the MLP's split products) take one lane.
#include "common/types.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint kLanes = 1u;  // a power of two, 1 .. 256

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

shared float sums[256];

#ifdef ROPE
// RoPE on the output as it is written (ops::RopeInReduce: training's q and k products): C's columns are heads of
// kHeadDim values, rotated as shaders/rope.comp rotates them after the output is rounded to C's type, so the same
// bits. An invocation a pair (i, i + kHeadDim/2) of a row, adding up both elements' slices itself in the order the
// kLanes lanes of the plain reduce would (common/split_sums.glsl).
layout(constant_id = 2) const uint kHeadDim = 64u;
layout(binding = 6) readonly buffer RopePositions { int rope_positions[]; };
layout(binding = 7) readonly buffer RopeInvFreq { float rope_inv_freq[]; };
#include "common/rope_angle.glsl"
#include "common/round_to.glsl"
#include "common/split_sums.glsl"
DEFINE_SPLIT_SUM(slices_sum, a, p.K, kLanes)

void main() {
  const uint half_d = kHeadDim / 2u, row_pairs = p.N / 2u, pairs = p.M * row_pairs, slice = p.M * p.N;
  const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * 256u;
  const uint first = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 256u + gl_LocalInvocationID.x;
  for (uint j = first; j < pairs; j += stride) {
    const uint m = j / row_pairs, r = j % row_pairs, i = r % half_d;
    const uint n = (r / half_d) * kHeadDim + i, lo = m * p.N + n;
    const float s0 = slices_sum(lo, slice), s1 = slices_sum(lo + half_d, slice);
    precise float angle = float(rope_positions[m]) * rope_inv_freq[i];
    const vec2 y = rope_rotate(ROUND_TO(C_T, gemm_value(m, n, s0)), ROUND_TO(C_T, gemm_value(m, n + half_d, s1)),
                               sin_cos(angle));
    c[m * p.c_sm + n] = FROM_F32(C_T, y.x);
    c[m * p.c_sm + n + half_d] = FROM_F32(C_T, y.y);
  }
}
#else
void main() {
  const uint total = p.M * p.N, slice = p.M * p.N, per_group = 256u / kLanes;
  const uint lane = gl_LocalInvocationID.x % kLanes, slot = gl_LocalInvocationID.x / kLanes;
  const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  // Every invocation of a workgroup runs the same number of rounds (the barriers below).
  for (uint first = group * per_group; first < total; first += groups * per_group) {
    const uint i = first + slot;
    float acc = 0.0;
    if (i < total)
      for (uint s = lane; s < p.K; s += kLanes) acc += TO_F32(A_T, a[s * slice + i]);
    if (kLanes == 1u) {
      if (i < total) gemm_store(i / p.N, i % p.N, acc, 0u);
      continue;
    }
    sums[gl_LocalInvocationID.x] = acc;
    barrier();
    for (uint half_ = kLanes / 2u; half_ > 0u; half_ /= 2u) {
      if (lane < half_) sums[gl_LocalInvocationID.x] += sums[gl_LocalInvocationID.x + half_];
      barrier();
    }
    if (lane == 0u && i < total) gemm_store(i / p.N, i % p.N, sums[gl_LocalInvocationID.x], 0u);
    barrier();
  }
}
#endif
