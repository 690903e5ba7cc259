#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core variant of shaders/matmul.comp (same bindings, push constants and epilogue) through
// GL_NV_cooperative_matrix2: workgroup-scope matrices whose tiles the driver loads from and stores to
// global memory itself (coopMatLoadTensorNV / coopMatStoreTensorNV), staging them through shared memory
// and spreading the products over the workgroup's subgroups as it sees fit. f16 × f16 → f32.
// A BM×BN output tile per workgroup; K advances BK at a time. Compiled by a glslang that knows the
// extension (>= 14; docs/design.md "Kernels", scripts/glslang.sh); ops/matmul.cpp picks it where the device offers
// VK_NV_cooperative_matrix2 and each operand is contiguous along one of its two indices:
//   A (i, k) at a_base + i·a_sm + k·a_sk: a_sk = 1 (activations) or a_sm = 1 (dyᵀ in dW = dyᵀ·x);
//   B (j, k) at b_base + j·b_sn + k·b_sk: b_sk = 1 (y = x·Wᵀ) or b_sn = 1 (dx = dy·W, dW's x).
// f32 operands are loaded as f32 matrices and converted to f16 in registers (A_IS_F32, B_IS_F32).
// Epilogue: alpha and accumulation (beta·C) on whole matrices and one tensor store; with a bias or the
// LoRA term, each element goes through gemm_store (shaders/common/gemm_epilogue.glsl) instead.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#include "common/types.glsl"

#ifndef BM
#define BM 128
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef THREADS
#define THREADS 256
#endif
layout(local_size_x = THREADS) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

#if defined(A_IS_F32)
#define A_ELEM float
#else
#define A_ELEM float16_t
#endif
#if defined(B_IS_F32)
#define B_ELEM float
#else
#define B_ELEM float16_t
#endif

#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

// The element-wise epilogue for one element of the tile at (m0, n0); elements outside C are skipped.
float store_element(const in uint row, const in uint col, const in float elem, const in uint m0,
                    const in uint n0, const in uint c_base) {
  const uint m = m0 + row, n = n0 + col;
  if (m < p.M && n < p.N) gemm_store(m, n, elem, c_base);
  return elem;
}

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  uint a_base, b_base, c_base;
  gemm_bases(z, a_base, b_base, c_base);
  const bool a_t = p.a_sk != 1u;  // A contiguous along m (a_sm = 1)
  const bool b_t = p.b_sk != 1u;  // B contiguous along n (b_sn = 1)

  // The operands' layouts, bounded by their dimensions: reads past them give 0 (the K tail, edge tiles).
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  if (a_t) {
    la = setTensorLayoutDimensionNV(la, p.K, p.M);
    la = setTensorLayoutStrideNV(la, p.a_sk, 1);
  } else {
    la = setTensorLayoutDimensionNV(la, p.M, p.K);
    la = setTensorLayoutStrideNV(la, p.a_sm, 1);
  }
  if (b_t) {
    lb = setTensorLayoutDimensionNV(lb, p.K, p.N);
    lb = setTensorLayoutStrideNV(lb, p.b_sk, 1);
  } else {
    lb = setTensorLayoutDimensionNV(lb, p.N, p.K);
    lb = setTensorLayoutStrideNV(lb, p.b_sn, 1);
  }
  lc = setTensorLayoutDimensionNV(lc, p.M, p.N);
  lc = setTensorLayoutStrideNV(lc, p.c_sm, 1);

  ACC acc = ACC(0.0);
  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    coopmat<A_ELEM, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<B_ELEM, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
    if (a_t) coopMatLoadTensorNV(ma, a, a_base, sliceTensorLayoutNV(la, k0, BK, m0, BM), transposed);
    else coopMatLoadTensorNV(ma, a, a_base, sliceTensorLayoutNV(la, m0, BM, k0, BK));
    if (b_t) coopMatLoadTensorNV(mb, b, b_base, sliceTensorLayoutNV(lb, k0, BK, n0, BN));
    else coopMatLoadTensorNV(mb, b, b_base, sliceTensorLayoutNV(lb, n0, BN, k0, BK), transposed);
#if defined(A_IS_F32) || defined(B_IS_F32)
    acc = coopMatMulAdd(MAT_A(ma), MAT_B(mb), acc);
#else
    acc = coopMatMulAdd(ma, mb, acc);
#endif
  }

  if ((p.flags & 5u) != 0u) {  // bias or LoRA: element by element
    coopMatPerElementNV(acc, acc, store_element, m0, n0, c_base);
    return;
  }
  if (p.alpha != 1.0) acc = acc * p.alpha;
  if ((p.flags & 2u) != 0u) {
    coopmat<STORE(C_T), gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> old;
    coopMatLoadTensorNV(old, c, c_base, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
    acc = acc + ACC(old) * p.beta;
  }
  coopmat<STORE(C_T), gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> out_tile =
      coopmat<STORE(C_T), gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
  coopMatStoreTensorNV(out_tile, c, c_base, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
