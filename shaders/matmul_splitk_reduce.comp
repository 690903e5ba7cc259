#version 450
#extension GL_GOOGLE_include_directive : require
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
