#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core variant of shaders/matmul.comp (same bindings, push constants and epilogue) through
// GL_NV_cooperative_matrix: f16 × f16 → f32 at 16×16×16.
// A 64×128 output tile per workgroup of 8 subgroups of 32 (a 2×4 grid; each owns 32×32 = 2×2
// matrices). K advances 64 at a time: the A (64×64) and B (128×64) tiles are staged in shared memory
// as packed f16 (uvec4 = 8 halves), loaded 16 bytes at a time when the operand is K-contiguous and
// 8-aligned (the common y = x·Wᵀ layout), element by element otherwise; bf16 weights become f16 on
// the way (exact for |w| >= 2^-14). Each subgroup then passes its accumulators through a 16×16 f32
// scratch to the element-wise epilogue (bias, LoRA, accumulate).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"
layout(binding = 0) readonly buffer BufA8 { uvec4 a8[]; };  // the same buffers, 8 halves at a time
layout(binding = 1) readonly buffer BufB8 { uvec4 b8[]; };

const uint BM = 64u, BN = 128u, BK = 64u, BK8 = BK / 8u;
// Rows of the staged tiles are BK8 + 1 uvec4 apart: a 144-byte stride spreads the 16 rows a
// cooperative load reads over the shared-memory banks (128 bytes would put them all on the same ones).
const uint LD = BK8 + 1u;
shared uvec4 tile_a[BM * LD];  // [m][k / 8]
shared uvec4 tile_b[BN * LD];  // [n][k / 8]
shared float scratch[8u * 256u];

uint pack_pair(float lo, float hi) { return packHalf2x16(vec2(lo, hi)); }

// 8 consecutive-k elements of A row m (or B row n) as packed halves, element by element.
uvec4 gather_a(uint m, uint k, uint base) {
  float v[8];
  for (uint i = 0u; i < 8u; ++i)
    v[i] = (m < p.M && k + i < p.K) ? TO_F32(A_T, a[base + m * p.a_sm + (k + i) * p.a_sk]) : 0.0;
  return uvec4(pack_pair(v[0], v[1]), pack_pair(v[2], v[3]), pack_pair(v[4], v[5]), pack_pair(v[6], v[7]));
}
uvec4 gather_b(uint n, uint k, uint base) {
  float v[8];
  for (uint i = 0u; i < 8u; ++i)
    v[i] = (n < p.N && k + i < p.K) ? TO_F32(B_T, b[base + n * p.b_sn + (k + i) * p.b_sk]) : 0.0;
  return uvec4(pack_pair(v[0], v[1]), pack_pair(v[2], v[3]), pack_pair(v[4], v[5]), pack_pair(v[6], v[7]));
}

// 16 bytes of B as packed halves: f16 as is, bf16 converted.
uvec4 b8_as_half(uvec4 raw) {
#if defined(B_IS_BF16)
  uvec4 r;
  for (uint i = 0u; i < 4u; ++i)
    r[i] = pack_pair(uintBitsToFloat(raw[i] << 16), uintBitsToFloat(raw[i] & 0xffff0000u));
  return r;
#else
  return raw;
#endif
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = sg / 4u, wn = sg % 4u;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  const uint a_base = z * p.a_sz, b_base = z * p.b_sz, c_base = z * p.c_sz;
  // Uniform per dispatch: can this operand be read 16 bytes at a time?
  const bool vec_a = p.a_sk == 1u && p.a_sm % 8u == 0u && p.K % 8u == 0u && a_base % 8u == 0u;
  const bool vec_b = p.b_sk == 1u && p.b_sn % 8u == 0u && p.K % 8u == 0u && b_base % 8u == 0u;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    for (uint r = 0u; r < (BM * BK8) / 256u; ++r) {
      uint idx = tid + r * 256u, mm = idx / BK8, kq = idx % BK8;
      uint m = m0 + mm, k = k0 + kq * 8u;
      if (vec_a) tile_a[mm * LD + kq] = (m < p.M && k < p.K) ? a8[(a_base + m * p.a_sm + k) / 8u] : uvec4(0u);
      else tile_a[mm * LD + kq] = gather_a(m, k, a_base);
    }
    for (uint r = 0u; r < (BN * BK8) / 256u; ++r) {
      uint idx = tid + r * 256u, nn = idx / BK8, kq = idx % BK8;
      uint n = n0 + nn, k = k0 + kq * 8u;
      if (vec_b) tile_b[nn * LD + kq] = (n < p.N && k < p.K) ? b8_as_half(b8[(b_base + n * p.b_sn + k) / 8u]) : uvec4(0u);
      else tile_b[nn * LD + kq] = gather_b(n, k, b_base);
    }
    barrier();
    for (uint kk = 0u; kk < BK8; kk += 2u) {  // 16 halves = 2 uvec4 per step
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma[2], mb[2];
      for (uint i = 0u; i < 2u; ++i) coopMatLoadNV(ma[i], tile_a, (wm * 32u + i * 16u) * LD + kk, LD, false);
      for (uint j = 0u; j < 2u; ++j) coopMatLoadNV(mb[j], tile_b, (wn * 32u + j * 16u) * LD + kk, LD, true);
      for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < 2u; ++j) acc[i][j] = coopMatMulAddNV(ma[i], mb[j], acc[i][j]);
    }
    barrier();
  }

  const uint s0 = sg * 256u;
  for (uint i = 0u; i < 2u; ++i) {
    for (uint j = 0u; j < 2u; ++j) {
      coopMatStoreNV(acc[i][j], scratch, s0, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
        uint m = m0 + wm * 32u + i * 16u + e / 16u, n = n0 + wn * 32u + j * 16u + e % 16u;
        if (m < p.M && n < p.N) gemm_store(m, n, scratch[s0 + e], c_base);
      }
      subgroupBarrier();
    }
  }
}
