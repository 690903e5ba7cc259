#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// The flash backward's row statistic in a pass of its own (ops/attention_flash.cpp): for query row t of head h,
//   delta[b, h, t] = Σ_d do[b, t, h, d]·o[b, t, h, d]   (f32 sums)
// so that the cooperative-matrix-2 dq and dk/dv kernels (shaders/flash_attention_cm2.comp) both read it and run
// in one stage, instead of dk/dv waiting for the dq kernel to write it. do f32, o in T (f32 or f16), both
// [B, T, H, D]; delta [B, H, T] f32. kLanes invocations share a row, reading it in contiguous runs; their sums are
// added in a fixed tree in shared memory. Workgroups may span two dimensions (x fastest). With p.do16, it also
// writes do's f16 copy [B, T, H, D] for those kernels, which round dO to f16 for their products anyway: half the
// bytes at each of their reads, and the same results.
#include "common/types.glsl"
layout(local_size_x = 256) in;
const uint kLanes = 16u, kRowsPerGroup = 256u / kLanes;

// With kSlices > 0, binding 0 holds the partial sums [kSlices, B·T·H·D] of the split product that makes do (o's dx,
// ops::SplitSums), added up here as its reduce adds them (common/split_sums.glsl, kSplitLanes lanes): the same bits.
layout(constant_id = 1) const uint kSlices = 0u;
layout(constant_id = 2) const uint kSplitLanes = 1u;
layout(binding = 0) readonly buffer DO { float do_[]; };
#include "common/split_sums.glsl"
DEFINE_SPLIT_SUM(do_sum, do_, kSlices, kSplitLanes)
layout(binding = 1) readonly buffer O { STORE(T) o[]; };
layout(binding = 2) writeonly buffer Delta { float delta[]; };
layout(binding = 3) writeonly buffer DO16 { float16_t do16[]; };
layout(push_constant) uniform Params {
  uint B, T, H, D;
  uint do16;  // 1: write do16
} p;

shared float sums[256];

void main() {
  const uint lane = gl_LocalInvocationID.x % kLanes, slot = gl_LocalInvocationID.x / kLanes;
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint row = group * kRowsPerGroup + slot;  // row = (b·T + t)·H + h
  const bool inside = row < p.B * p.T * p.H;
  float acc = 0.0;
  if (inside)
    for (uint d = lane; d < p.D; d += kLanes) {
      const float g = kSlices > 0u ? do_sum(row * p.D + d, p.B * p.T * p.H * p.D) : do_[row * p.D + d];
      acc += g * TO_F32(T, o[row * p.D + d]);
      if (p.do16 != 0u) do16[row * p.D + d] = float16_t(g);
    }
  sums[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint half_ = kLanes / 2u; half_ > 0u; half_ /= 2u) {
    if (lane < half_) sums[gl_LocalInvocationID.x] += sums[gl_LocalInvocationID.x + half_];
    barrier();
  }
  if (lane == 0u && inside) {
    const uint h = row % p.H, t = (row / p.H) % p.T, b = row / (p.H * p.T);
    delta[(b * p.H + h) * p.T + t] = sums[gl_LocalInvocationID.x];
  }
}
