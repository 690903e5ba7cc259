#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core variant of shaders/matmul.comp (same bindings, push constants and epilogue) through
// GL_NV_cooperative_matrix: f16 × f16 → f32 at 16×16×16. A 64×64 output tile per workgroup of 4
// subgroups of 32 (each owns 32×32 = 2×2 matrices); operand tiles 64×32 are staged through shared
// memory as f16 with the same strided loads as the scalar kernel (bf16 weights convert on the way),
// then the f32 accumulators go through shared memory to the element-wise epilogue.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common/types.glsl"

layout(local_size_x = 128) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

const uint BM = 64, BN = 64, BK = 32;
shared float16_t tile_a[BM * BK];  // [m][k]
shared float16_t tile_b[BN * BK];  // [n][k]
shared float tile_c[BM * BN];      // [m][n]

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID;             // 0..3
  const uint wm = sg >> 1u, wn = sg & 1u;    // this subgroup's 32×32 quadrant
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  const uint a_base = z * p.a_sz, b_base = z * p.b_sz, c_base = z * p.c_sz;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    for (uint r = 0u; r < (BM * BK) / 128u; ++r) {
      uint idx = tid + r * 128u;
      uint mm = p.a_sk == 1u ? idx / BK : idx % BM;
      uint kk = p.a_sk == 1u ? idx % BK : idx / BM;
      uint m = m0 + mm, k = k0 + kk;
      tile_a[mm * BK + kk] = float16_t((m < p.M && k < p.K) ? TO_F32(A_T, a[a_base + m * p.a_sm + k * p.a_sk]) : 0.0);
      uint nn = p.b_sk == 1u ? idx / BK : idx % BN;
      uint kb = p.b_sk == 1u ? idx % BK : idx / BN;
      uint n = n0 + nn, kn = k0 + kb;
      tile_b[nn * BK + kb] = float16_t((n < p.N && kn < p.K) ? TO_F32(B_T, b[b_base + n * p.b_sn + kn * p.b_sk]) : 0.0);
    }
    barrier();
    for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma[2], mb[2];
      for (uint i = 0u; i < 2u; ++i)
        coopMatLoadNV(ma[i], tile_a, (wm * 32u + i * 16u) * BK + kk, BK, false);
      for (uint j = 0u; j < 2u; ++j)
        coopMatLoadNV(mb[j], tile_b, (wn * 32u + j * 16u) * BK + kk, BK, true);
      for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < 2u; ++j) acc[i][j] = coopMatMulAddNV(ma[i], mb[j], acc[i][j]);
    }
    barrier();
  }

  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j)
      coopMatStoreNV(acc[i][j], tile_c, (wm * 32u + i * 16u) * BN + wn * 32u + j * 16u, BN, false);
  barrier();
  for (uint e = tid; e < BM * BN; e += 128u) {
    uint m = m0 + e / BN, n = n0 + e % BN;
    if (m < p.M && n < p.N) gemm_store(m, n, tile_c[e], c_base);
  }
}
