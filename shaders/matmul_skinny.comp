#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
// Products with one short side (at most 16 outputs across) and a long reduction: LoRA's rank-r products
// in training (t = x·Aᵀ, dt = dy·B, dA += dtᵀ·x, dB += dyᵀ·t). A 64×64 tile would leave most of its
// outputs empty there. out(l, s) = Σ_k L(l, k)·S(s, k) over a long operand L and a short one S (≤ 16
// rows), f32 throughout. flags bit 8 (SWAP): L is B and S is A, so C(m, n) = out(n, m); otherwise L is A.
// Two layouts of L, chosen by the host (ops/matmul.cpp) by which of L's strides is 1:
//   ROWS_ALONG_K: L's rows are contiguous along k. A workgroup per long index l: its 256 invocations
//                 step through k, then subgroup sums and a sum over the subgroups.
//   otherwise:    L is contiguous along l. One invocation per long index: it walks its slice of k; the
//                 host splits k over workgroups (gl_WorkGroupID.z, as in gemm_bases) and adds the
//                 slices in a second pass (shaders/matmul_splitk_reduce.comp).
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

const uint kMaxShort = 16u;
const uint kSwap = 256u;
#if defined(ROWS_ALONG_K)
// [subgroup][s], subgroups of at least 8 (ops/matmul.cpp): 2 KiB. Sized for subgroups of 1 (16 KiB) it
// allowed 3 workgroups an SM on the H100; 2 KiB did not change these products' time there (session 11), so
// something else holds them (t = x·Aᵀ at 7B: ~32 µs for ~7 MB of reads).
const uint kMaxSubgroups = 256u / 8u;
shared float partial[kMaxSubgroups * kMaxShort];
#endif

void main() {
  const bool swap = (p.flags & kSwap) != 0u;
  const uint L = swap ? p.N : p.M, S = swap ? p.M : p.N;
  const uint l_sl = swap ? p.b_sn : p.a_sm, l_sk = swap ? p.b_sk : p.a_sk;  // L's strides
  const uint s_ss = swap ? p.a_sm : p.b_sn, s_sk = swap ? p.a_sk : p.b_sk;  // S's strides
  uint a_base, b_base, c_base;
  gemm_bases(gl_WorkGroupID.z, a_base, b_base, c_base);
  const uint l_base = swap ? b_base : a_base, s_base = swap ? a_base : b_base;

  float acc[kMaxShort];
  [[unroll]] for (uint s = 0u; s < kMaxShort; ++s) acc[s] = 0.0;

#if defined(ROWS_ALONG_K)
  // A workgroup per long index: its invocations split k, then a subgroup sum and a sum over subgroups.
  const uint l = gl_WorkGroupID.x;
  for (uint k = gl_LocalInvocationID.x; k < p.K; k += 256u) {
    const float v = swap ? b[l_base + l * l_sl + k * l_sk] : a[l_base + l * l_sl + k * l_sk];
    [[unroll]] for (uint s = 0u; s < kMaxShort; ++s)
      if (s < S) acc[s] = fma(v, swap ? a[s_base + s * s_ss + k * s_sk] : b[s_base + s * s_ss + k * s_sk], acc[s]);
  }
  [[unroll]] for (uint s = 0u; s < kMaxShort; ++s) {
    if (s < S) {
      const float sum = subgroupAdd(acc[s]);
      if (gl_SubgroupInvocationID == 0u) partial[gl_SubgroupID * kMaxShort + s] = sum;
    }
  }
  barrier();
  if (gl_LocalInvocationID.x < S) {
    const uint s = gl_LocalInvocationID.x;
    float sum = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) sum += partial[g * kMaxShort + s];
    if (swap) gemm_store(s, l, sum, c_base);
    else gemm_store(l, s, sum, c_base);
  }
#else
  const uint l = gl_GlobalInvocationID.x;
  if (l >= L) return;
  for (uint k0 = 0u; k0 < p.K; k0 += 4u) {  // 4 k at a time: their loads are in flight together
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint k = k0 + j;
      if (k < p.K) {
        const float v = swap ? b[l_base + l * l_sl + k * l_sk] : a[l_base + l * l_sl + k * l_sk];
        [[unroll]] for (uint s = 0u; s < kMaxShort; ++s)
          if (s < S) acc[s] = fma(v, swap ? a[s_base + s * s_ss + k * s_sk] : b[s_base + s * s_ss + k * s_sk], acc[s]);
      }
    }
  }
  [[unroll]] for (uint s = 0u; s < kMaxShort; ++s) {
    if (s < S) {
      if (swap) gemm_store(s, l, acc[s], c_base);
      else gemm_store(l, s, acc[s], c_base);
    }
  }
#endif
}
