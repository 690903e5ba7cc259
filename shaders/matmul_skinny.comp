#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
// Products with one short side (at most 16 outputs across) and a long reduction: LoRA's rank-r products
// in training (t = x·Aᵀ, dt = dy·B, dA += dtᵀ·x, dB += dyᵀ·t). A 64×64 tile would leave most of its
// outputs empty there. out(l, s) = Σ_k L(l, k)·S(s, k) over a long operand L and a short one S (≤ 16
// rows), f32 arithmetic; L may be stored in f16 (training's f16 activations, model/layer_acts.h). kSwap: L is B and S is A, so C(m, n) = out(n, m); otherwise L is A.
// Two layouts of L, chosen by the host (ops/matmul.cpp) by which of L's strides is 1:
//   ROWS_ALONG_K: L's rows are contiguous along k. A workgroup per kRows long indices: its 256
//                 invocations step through k, then subgroup sums and a sum over the subgroups.
//   otherwise:    L is contiguous along l. One invocation per long index: it walks its slice of k; the
//                 host splits k over workgroups (gl_WorkGroupID.z, as in gemm_bases) and adds the
//                 slices in a second pass (shaders/matmul_splitk_reduce.comp).
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

// The short side and the orientation are specialization constants (ops/matmul.cpp sets both): with a run-time
// count the loads sat inside `if (s < S)` and were issued one after another, each waiting for the last
// (t = x·Aᵀ at 7B took ~32 µs for ~7 MB of reads on the H100, session 11).
layout(constant_id = 1) const uint kShort = 16u;  // S: 1 .. kMaxShort
layout(constant_id = 2) const uint kSwap = 0u;    // 1: L is B and S is A, so C(m, n) = out(n, m)
const uint kMaxShort = 16u;
#if defined(ROWS_ALONG_K)
// Long indices a workgroup, 1 to kMaxRows: each S value loaded serves them all. With one, every workgroup
// read all of S from L2 (7B: 114 KB each, 58 MB a product).
layout(constant_id = 3) const uint kRows = 1u;
const uint kMaxRows = 4u;
// [subgroup][row][s], subgroups of at least 8 (ops/matmul.cpp): 8 KiB.
const uint kMaxSubgroups = 256u / 8u;
shared float partial[kMaxSubgroups * kMaxRows * kMaxShort];
#endif

float long_at(uint i) { return kSwap != 0u ? TO_F32(B_T, b[i]) : TO_F32(A_T, a[i]); }
float short_at(uint i) { return kSwap != 0u ? TO_F32(A_T, a[i]) : TO_F32(B_T, b[i]); }

void main() {
  const bool swap = kSwap != 0u;
  const uint L = swap ? p.N : p.M;
  const uint l_sl = swap ? p.b_sn : p.a_sm, l_sk = swap ? p.b_sk : p.a_sk;  // L's strides
  const uint s_ss = swap ? p.a_sm : p.b_sn, s_sk = swap ? p.a_sk : p.b_sk;  // S's strides
  uint a_base, b_base, c_base;
  gemm_bases(gl_WorkGroupID.z, a_base, b_base, c_base);
  const uint l_base = swap ? b_base : a_base, s_base = swap ? a_base : b_base;

#if defined(ROWS_ALONG_K)
  // A workgroup per kRows long indices: its invocations split k, then subgroup sums and a sum over subgroups.
  // A row past L reads the last one again and stores nothing.
  float acc[kMaxRows][kMaxShort];
  [[unroll]] for (uint r = 0u; r < kMaxRows; ++r)
    [[unroll]] for (uint s = 0u; s < kMaxShort; ++s) acc[r][s] = 0.0;
  const uint l0 = gl_WorkGroupID.x * kRows;
  for (uint k = gl_LocalInvocationID.x; k < p.K; k += 256u) {
    float sv[kMaxShort];
    [[unroll]] for (uint s = 0u; s < kShort; ++s) sv[s] = short_at(s_base + s * s_ss + k * s_sk);
    [[unroll]] for (uint r = 0u; r < kRows; ++r) {
      const float v = long_at(l_base + min(l0 + r, L - 1u) * l_sl + k * l_sk);
      [[unroll]] for (uint s = 0u; s < kShort; ++s) acc[r][s] = fma(v, sv[s], acc[r][s]);
    }
  }
  [[unroll]] for (uint r = 0u; r < kRows; ++r)
    [[unroll]] for (uint s = 0u; s < kShort; ++s) {
      const float sum = subgroupAdd(acc[r][s]);
      if (gl_SubgroupInvocationID == 0u) partial[(gl_SubgroupID * kMaxRows + r) * kMaxShort + s] = sum;
    }
  barrier();
  if (gl_LocalInvocationID.x < kRows * kShort) {
    const uint r = gl_LocalInvocationID.x / kShort, s = gl_LocalInvocationID.x % kShort, l = l0 + r;
    float sum = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) sum += partial[(g * kMaxRows + r) * kMaxShort + s];
    if (l < L) {
      if (swap) gemm_store(s, l, sum, c_base);
      else gemm_store(l, s, sum, c_base);
    }
  }
#else
  float acc[kMaxShort];
  [[unroll]] for (uint s = 0u; s < kMaxShort; ++s) acc[s] = 0.0;
  const uint l = gl_GlobalInvocationID.x;
  if (l >= L) return;
  uint k = 0u;
  for (; k + 4u <= p.K; k += 4u) {  // 4 k at a time, their loads issued together
    float v[4];
    [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = long_at(l_base + l * l_sl + (k + j) * l_sk);
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      [[unroll]] for (uint s = 0u; s < kShort; ++s)
        acc[s] = fma(v[j], short_at(s_base + s * s_ss + (k + j) * s_sk), acc[s]);
  }
  for (; k < p.K; ++k) {
    const float v = long_at(l_base + l * l_sl + k * l_sk);
    [[unroll]] for (uint s = 0u; s < kShort; ++s) acc[s] = fma(v, short_at(s_base + s * s_ss + k * s_sk), acc[s]);
  }
  [[unroll]] for (uint s = 0u; s < kShort; ++s) {
    if (swap) gemm_store(s, l, acc[s], c_base);
    else gemm_store(l, s, acc[s], c_base);
  }
#endif
}
