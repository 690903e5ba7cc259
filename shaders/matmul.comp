#version 450
#extension GL_GOOGLE_include_directive : require
// C[z](m, n) = alpha · Σ_k A[z](m, k)·B[z](n, k)  (+ bias[n])  (+ s·Σ_j T(m, j)·L(n, j))  (+ beta·C[z](m, n))
// with every operand addressed through strides, so one kernel serves y = x·Wᵀ, dx = dy·W and
// dW = dyᵀ·x. The optional low-rank term is the LoRA epilogue: T = x·Aᵀ (f32, [M, r]), L = lora B
// (f32, [N, r]). Scalar tiled path: a 64×64 tile per workgroup, 16×16 threads with 4×4 outputs each,
// K staged through shared memory 16 at a time; accumulation in f32.
#include "common/types.glsl"

layout(local_size_x = 16, local_size_y = 16) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

const uint BM = 64, BN = 64, BK = 16;
shared float tile_a[BK][BM];
shared float tile_b[BK][BN];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  uint a_base, b_base, c_base;
  gemm_bases(z, a_base, b_base, c_base);

  float acc[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    // Each thread stages 4 elements of each tile. Consecutive threads walk the unit-stride axis so
    // that global reads coalesce whichever way the operand is laid out.
    for (uint r = 0u; r < 4u; ++r) {
      uint idx = tid + r * 256u;
      uint mm = p.a_sk == 1u ? idx / BK : idx % BM;
      uint kk = p.a_sk == 1u ? idx % BK : idx / BM;
      uint m = m0 + mm, k = k0 + kk;
      tile_a[kk][mm] = (m < p.M && k < p.K) ? TO_F32(A_T, a[a_base + m * p.a_sm + k * p.a_sk]) : 0.0;
      uint nn = p.b_sk == 1u ? idx / BK : idx % BN;
      uint kb = p.b_sk == 1u ? idx % BK : idx / BN;
      uint n = n0 + nn, kn = k0 + kb;
      tile_b[kb][nn] = (n < p.N && kn < p.K) ? TO_F32(B_T, b[b_base + n * p.b_sn + kn * p.b_sk]) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < BK; ++kk) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = tile_a[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = tile_b[kk][tx + 16u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier();
  }

  for (uint i = 0u; i < 4u; ++i) {
    uint m = m0 + ty + 16u * i;
    for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tx + 16u * j;
      if (m < p.M && n < p.N) gemm_store(m, n, acc[i][j], c_base);
    }
  }
}
