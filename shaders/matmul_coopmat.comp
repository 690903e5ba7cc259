#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core variant of shaders/matmul.comp (same bindings, push constants and epilogue) through
// GL_NV_cooperative_matrix, or GL_KHR_cooperative_matrix with COOPMAT_KHR (common/coopmat_api.glsl): f16 × f16
// → f32 at 16×16×16.
// A BM×BN output tile per workgroup of SG_M×SG_N subgroups of 32, each owning (BM/SG_M)×(BN/SG_N)
// = FM×FN matrices (the defaults: 64×128, 2×4 subgroups of 2×2, K step 32; a kernel may set BM, BN, BK,
// SG_M and SG_N; ops/matmul.cpp dispatches each with its tile). Shared memory holds the staged tiles
// and, for the epilogue, the whole BM×BN f32 output tile: 47 KiB of the 48 at the defaults. On the H100
// at Qwen2.5-0.5B's training shapes 128×64 was as fast as 64×128 and 64×64 slower (session 5), for
// attention's f32 × f32 products too.
// K advances BK at a time: the A (BM×BK) and B (BN×BK) tiles are staged in shared memory as packed
// f16 (uvec4 = 8 halves). The next K step's tiles are read from global memory into registers while
// the tensor cores work on the current one. Loads are 16 bytes wide when an operand's rows are
// contiguous and 8-aligned: A along k or, transposed, along m (dW = dyᵀ·x); B along k (y = x·Wᵀ) or,
// transposed, along n (dx = dy·W, where the weight [N, K] is read down its columns); element by element
// otherwise. f32 operands (A_IS_F32, B_IS_F32) and bf16 weights become f16 on the way (f32 clamped to
// ±65504; bf16 exact for |w| >= 2^-14). Each subgroup passes its accumulators through shared memory
// to the element-wise epilogue (bias, LoRA, accumulate).
// DIRECT_STORE (the big tile, 128×128 on 2×2 subgroups of 4×4 matrices: the shape of the ~378 TFLOP/s
// ceiling probe, bench/RESULTS.md): ops/matmul.cpp picks it only when every tile lies inside C and the epilogue is
// at most alpha and accumulation (beta·C), so each accumulator goes straight to C with no shared scratch;
// the shared memory then holds only the staged tiles. A subgroup keeps one A matrix and its FN B
// matrices live at a time. On the H100 (session 6) it beats the default tile by 10-20% when both operands
// are f16 (up to 127 TFLOP/s at 8192³), and loses when the 128 invocations must also convert f32 or bf16
// operands while staging them; staging without the register prefetch of the next K step made no difference.
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
// Every loop over registers or matrices is unrolled: an array of accumulators indexed by a loop counter
// would otherwise live in local memory.
#extension GL_EXT_control_flow_attributes : require
#include "common/types.glsl"
#include "common/coopmat_api.glsl"

#ifndef BM
#define BM 64u
#define BN 128u
#define SG_M 2u
#define SG_N 4u
#endif
#ifndef BK
#define BK 32u
#endif
const uint THREADS = 32u * SG_M * SG_N;
layout(local_size_x = 32 * SG_M * SG_N) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"
#if defined(A_IS_F32)
layout(binding = 0) readonly buffer BufA4 { uvec4 a4[]; };  // the same buffer, 4 floats at a time
#else
layout(binding = 0) readonly buffer BufA8 { uvec4 a8[]; };  // the same buffer, 8 halves at a time
#endif
#if defined(B_IS_F32)
layout(binding = 1) readonly buffer BufB4 { uvec4 b4[]; };
#else
layout(binding = 1) readonly buffer BufB8 { uvec4 b8[]; };
#endif

const uint BK8 = BK / 8u, BN8 = BN / 8u;
const uint FM = BM / (16u * SG_M), FN = BN / (16u * SG_N);  // 16×16 matrices per subgroup along m and n
// Rows of the staged tiles are one uvec4 longer than the data: the odd 16-byte stride spreads the rows
// a cooperative load reads over the shared-memory banks.
const uint BM8 = BM / 8u;
const uint LD = BK8 + 1u;    // A [m][k / 8] and B [n][k / 8]
const uint LDT = BN8 + 1u;   // B transposed: [k][n / 8]
const uint LDTA = BM8 + 1u;  // A transposed: [k][m / 8]
const uint A_LOADS = BM * BK8 / THREADS, B_LOADS = BN * BK8 / THREADS;
shared uvec4 tile_a[max(BM * LD, BK * LDTA)];
shared uvec4 tile_b[max(BN * LD, BK * LDT)];
#if !defined(DIRECT_STORE)
shared float scratch[BM * BN];  // the accumulators, for the epilogue
#endif

uint pack_pair(float lo, float hi) { return packHalf2x16(clamp(vec2(lo, hi), -65504.0, 65504.0)); }
uvec4 pack8(float v[8]) {
  return uvec4(pack_pair(v[0], v[1]), pack_pair(v[2], v[3]), pack_pair(v[4], v[5]), pack_pair(v[6], v[7]));
}

// 8 consecutive-k elements of A row m (or B row n), element by element.
uvec4 gather_a(uint m, uint k, uint base) {
  float v[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    v[i] = (m < p.M && k + i < p.K) ? TO_F32(A_T, a[base + m * p.a_sm + (k + i) * p.a_sk]) : 0.0;
  return pack8(v);
}
uvec4 gather_b(uint n, uint k, uint base) {
  float v[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    v[i] = (n < p.N && k + i < p.K) ? TO_F32(B_T, b[base + n * p.b_sn + (k + i) * p.b_sk]) : 0.0;
  return pack8(v);
}

// 8 halves of A starting at element index i (a multiple of 8).
uvec4 load_a8(uint i) {
#if defined(A_IS_F32)
  vec4 lo = uintBitsToFloat(a4[i / 4u]), hi = uintBitsToFloat(a4[i / 4u + 1u]);
  return uvec4(pack_pair(lo.x, lo.y), pack_pair(lo.z, lo.w), pack_pair(hi.x, hi.y), pack_pair(hi.z, hi.w));
#else
  return a8[i / 8u];
#endif
}

// 8 halves of B starting at element index i (a multiple of 8): f16 as is, bf16 and f32 converted.
uvec4 load_b8(uint i) {
#if defined(B_IS_F32)
  vec4 lo = uintBitsToFloat(b4[i / 4u]), hi = uintBitsToFloat(b4[i / 4u + 1u]);
  return uvec4(pack_pair(lo.x, lo.y), pack_pair(lo.z, lo.w), pack_pair(hi.x, hi.y), pack_pair(hi.z, hi.w));
#elif defined(B_IS_BF16)
  uvec4 raw = b8[i / 8u], r;
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
    r[j] = packHalf2x16(vec2(uintBitsToFloat(raw[j] << 16), uintBitsToFloat(raw[j] & 0xffff0000u)));
  return r;
#else
  return b8[i / 8u];
#endif
}

uvec4 ra[A_LOADS], rb[B_LOADS];  // the next K step's tiles, this invocation's share

// Global memory -> ra, rb for the K step at k0.
void fetch(uint k0, uint m0, uint n0, uint a_base, uint b_base, bool vec_a, bool a_t, bool vec_b, bool b_t) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0u; r < A_LOADS; ++r) {
    uint idx = tid + r * THREADS;
    if (a_t) {  // [k][m / 8]
      uint k = k0 + idx / BM8, m = m0 + (idx % BM8) * 8u;
      ra[r] = (m < p.M && k < p.K) ? load_a8(a_base + k * p.a_sk + m) : uvec4(0u);
    } else {    // [m][k / 8]
      uint m = m0 + idx / BK8, k = k0 + (idx % BK8) * 8u;
      if (vec_a) ra[r] = (m < p.M && k < p.K) ? load_a8(a_base + m * p.a_sm + k) : uvec4(0u);
      else ra[r] = gather_a(m, k, a_base);
    }
  }
  [[unroll]] for (uint r = 0u; r < B_LOADS; ++r) {
    uint idx = tid + r * THREADS;
    if (b_t) {  // [k][n / 8]
      uint k = k0 + idx / BN8, n = n0 + (idx % BN8) * 8u;
      rb[r] = (n < p.N && k < p.K) ? load_b8(b_base + k * p.b_sk + n) : uvec4(0u);
    } else {    // [n][k / 8]
      uint n = n0 + idx / BK8, k = k0 + (idx % BK8) * 8u;
      if (vec_b) rb[r] = (n < p.N && k < p.K) ? load_b8(b_base + n * p.b_sn + k) : uvec4(0u);
      else rb[r] = gather_b(n, k, b_base);
    }
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = sg / SG_N, wn = sg % SG_N;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  uint a_base, b_base, c_base;
  gemm_bases(z, a_base, b_base, c_base);
  // Uniform per dispatch: which operands can be read 16 bytes at a time, and how B is staged.
  const bool vec_a = p.a_sk == 1u && p.a_sm % 8u == 0u && p.K % 8u == 0u && a_base % 8u == 0u;
  const bool a_t = !vec_a && p.a_sm == 1u && p.a_sk % 8u == 0u && p.M % 8u == 0u && a_base % 8u == 0u;
  const bool vec_b = p.b_sk == 1u && p.b_sn % 8u == 0u && p.K % 8u == 0u && b_base % 8u == 0u;
  const bool b_t = !vec_b && p.b_sn == 1u && p.b_sk % 8u == 0u && p.N % 8u == 0u && b_base % 8u == 0u;

  CM_ACC acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = CM_ACC(0.0);

  fetch(0u, m0, n0, a_base, b_base, vec_a, a_t, vec_b, b_t);
  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    [[unroll]] for (uint r = 0u; r < A_LOADS; ++r) {
      uint idx = tid + r * THREADS;
      if (a_t) tile_a[(idx / BM8) * LDTA + idx % BM8] = ra[r];
      else tile_a[(idx / BK8) * LD + idx % BK8] = ra[r];
    }
    [[unroll]] for (uint r = 0u; r < B_LOADS; ++r) {
      uint idx = tid + r * THREADS;
      if (b_t) tile_b[(idx / BN8) * LDT + idx % BN8] = rb[r];
      else tile_b[(idx / BK8) * LD + idx % BK8] = rb[r];
    }
    barrier();
    if (k0 + BK < p.K) {
      fetch(k0 + BK, m0, n0, a_base, b_base, vec_a, a_t, vec_b, b_t);
    }
    [[unroll]] for (uint kk = 0u; kk < BK8; kk += 2u) {  // 16 halves = 2 uvec4 per step
#if defined(DIRECT_STORE)
      CM_B mb[FN];
      if (b_t) {
        [[unroll]] for (uint j = 0u; j < FN; ++j)
          cm_load(mb[j], tile_b, kk * 8u * LDT + (wn * 16u * FN + j * 16u) / 8u, LDT, CM_ROW);
      } else {
        [[unroll]] for (uint j = 0u; j < FN; ++j) cm_load(mb[j], tile_b, (wn * 16u * FN + j * 16u) * LD + kk, LD, CM_COL);
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i) {
        CM_A ma;
        if (a_t) cm_load(ma, tile_a, kk * 8u * LDTA + (wm * 16u * FM + i * 16u) / 8u, LDTA, CM_COL);
        else cm_load(ma, tile_a, (wm * 16u * FM + i * 16u) * LD + kk, LD, CM_ROW);
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = cm_mul_add(ma, mb[j], acc[i][j]);
      }
#else
      CM_A ma[FM];
      CM_B mb[FN];
      if (a_t) {
        [[unroll]] for (uint i = 0u; i < FM; ++i)
          cm_load(ma[i], tile_a, kk * 8u * LDTA + (wm * 16u * FM + i * 16u) / 8u, LDTA, CM_COL);
      } else {
        [[unroll]] for (uint i = 0u; i < FM; ++i) cm_load(ma[i], tile_a, (wm * 16u * FM + i * 16u) * LD + kk, LD, CM_ROW);
      }
      if (b_t) {
        [[unroll]] for (uint j = 0u; j < FN; ++j)
          cm_load(mb[j], tile_b, kk * 8u * LDT + (wn * 16u * FN + j * 16u) / 8u, LDT, CM_ROW);
      } else {
        [[unroll]] for (uint j = 0u; j < FN; ++j) cm_load(mb[j], tile_b, (wn * 16u * FN + j * 16u) * LD + kk, LD, CM_COL);
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = cm_mul_add(ma[i], mb[j], acc[i][j]);
#endif
    }
    barrier();
  }

#if defined(DIRECT_STORE)
  const uint mb0 = m0 + wm * 16u * FM, nb0 = n0 + wn * 16u * FN;
  const bool accumulate = (p.flags & 2u) != 0u;
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      const uint ci = c_base + (mb0 + i * 16u) * p.c_sm + nb0 + j * 16u;
#if defined(C_IS_F16)
      CM_ACC16 r = CM_ACC16(acc[i][j] * p.alpha);
      if (accumulate) {
        CM_ACC16 old;
        cm_load(old, c, ci, p.c_sm, CM_ROW);
        r = r + old * float16_t(p.beta);
      }
#else
      CM_ACC r = acc[i][j] * p.alpha;
      if (accumulate) {
        CM_ACC old;
        cm_load(old, c, ci, p.c_sm, CM_ROW);
        r = r + old * p.beta;
      }
#endif
      cm_store(r, c, ci, p.c_sm, CM_ROW);
    }
}
#else

  // Epilogue: every accumulator of the subgroup into its own (16·FM)×(16·FN) block of shared memory, then
  // one element-wise pass, a row of 16·FN consecutive outputs per step. No barrier sits between the
  // accumulators: with one per 16×16 matrix (a single 16×16 scratch reused) the driver kept the
  // accumulator array in local memory through the whole K loop, which made the kernel 2.2× slower
  // (session 5, bench/RESULTS.md).
  const uint SW = 16u * FN, s0 = sg * FM * FN * 256u;
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) cm_store(acc[i][j], scratch, s0 + i * 16u * SW + j * 16u, SW, CM_ROW);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  const uint mb = m0 + wm * 16u * FM, nb = n0 + wn * 16u * FN;
  for (uint e = lane; e < FM * FN * 256u; e += gl_SubgroupSize) {
    uint m = mb + e / SW, n = nb + e % SW;
    if (m < p.M && n < p.N) gemm_store(m, n, scratch[s0 + e], c_base);
  }
}
#endif
