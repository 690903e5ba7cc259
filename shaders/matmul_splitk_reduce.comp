#version 450
#extension GL_GOOGLE_include_directive : require
// Second pass of a split-K matrix product: C(m, n) = epilogue(Σ_s partial[s](m, n)), the slices summed
// in order (deterministic, unlike atomics). The partial sums [S, M, N] f32 come in binding 0 (A), S in
// p.K; the epilogue (alpha, bias, LoRA term, accumulation into C) is shaders/matmul.comp's.
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

void main() {
  const uint total = p.M * p.N, slice = p.M * p.N;
  for (uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u; i < total;
       i += gl_NumWorkGroups.x * gl_NumWorkGroups.y * 256u) {
    float acc = 0.0;
    for (uint s = 0u; s < p.K; ++s) acc += TO_F32(A_T, a[s * slice + i]);
    gemm_store(i / p.N, i % p.N, acc, 0u);
  }
}
