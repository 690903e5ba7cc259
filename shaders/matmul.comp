#version 450
#extension GL_GOOGLE_include_directive : require
// C[z](m, n) = alpha · Σ_k A[z](m, k)·B[z](n, k)  (+ bias[n])  (+ s·Σ_j T(m, j)·L(n, j))  (+ beta·C[z](m, n))
// with every operand addressed through strides, so one kernel serves y = x·Wᵀ, dx = dy·W and
// dW = dyᵀ·x. The optional low-rank term is the LoRA epilogue: T = x·Aᵀ (f32, [M, r]), L = lora B
// (f32, [N, r]). Scalar tiled path: a 64×64 tile per workgroup, 16×16 threads with 4×4 outputs each,
// K staged through shared memory 16 at a time; accumulation in f32.
#include "common/types.glsl"

layout(local_size_x = 16, local_size_y = 16) in;

layout(binding = 0) readonly buffer BufA { STORE(A_T) a[]; };
layout(binding = 1) readonly buffer BufB { STORE(B_T) b[]; };
layout(binding = 2) buffer BufC { STORE(C_T) c[]; };
layout(binding = 3) readonly buffer BufBias { STORE(B_T) bias[]; };
layout(binding = 4) readonly buffer BufT { float lora_t[]; };
layout(binding = 5) readonly buffer BufL { float lora_l[]; };

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, a_sk, b_sn, b_sk, c_sm;  // element strides
  uint a_sz, b_sz, c_sz;              // batch strides (z = gl_WorkGroupID.z)
  float alpha, beta;
  uint flags;                         // 1: bias, 2: accumulate into C (beta), 4: LoRA epilogue
  uint rank;
  float lora_scale;
} p;

const uint BM = 64, BN = 64, BK = 16;
shared float tile_a[BK][BM];
shared float tile_b[BK][BN];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  const uint a_base = z * p.a_sz, b_base = z * p.b_sz, c_base = z * p.c_sz;

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
    if (m >= p.M) continue;
    for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tx + 16u * j;
      if (n >= p.N) continue;
      float v = p.alpha * acc[i][j];
      if ((p.flags & 1u) != 0u) v += TO_F32(B_T, bias[n]);
      if ((p.flags & 4u) != 0u) {
        float s = 0.0;
        for (uint r = 0u; r < p.rank; ++r) s = fma(lora_t[m * p.rank + r], lora_l[n * p.rank + r], s);
        v = fma(p.lora_scale, s, v);
      }
      uint ci = c_base + m * p.c_sm + n;
      if ((p.flags & 2u) != 0u) v = fma(p.beta, TO_F32(C_T, c[ci]), v);
      c[ci] = FROM_F32(C_T, v);
    }
  }
}
