#version 450
#extension GL_GOOGLE_include_directive : require
// Tensor-core variant of shaders/matmul.comp (same bindings, push constants and epilogue) through
// GL_NV_cooperative_matrix2: workgroup-scope matrices whose tiles the driver loads from and stores to
// global memory itself (coopMatLoadTensorNV / coopMatStoreTensorNV), spreading the products over the
// workgroup's subgroups as it sees fit. f16 × f16 → f32 sums; C f32 or f16.
// A BM×BN output tile per workgroup; K advances BK at a time. Compiled by a glslang that knows the
// extension (>= 14; docs/design.md "Kernels", scripts/glslang.sh). ops/matmul.cpp picks it where the
// device offers VK_NV_cooperative_matrix2, A is contiguous along k (an f32 A is converted to f16 first,
// by ops/convert) and B along one of its indices, fixed at compile time (no branch in the K loop):
//   A (i, k) at a_base + i·a_sm + k;
//   B (j, k) at b_base + j·b_sn + k (y = x·Wᵀ), or with B_ALONG_N at b_base + j + k·b_sk (dx = dy·W).
// Every row stride and batch offset is a multiple of 8 elements (16-byte rows for the driver's loads).
// Tiles wholly inside C with K a multiple of BK (nearly all of a model's products) take unclamped
// layouts and a K loop unrolled UNROLL times; the others clamp their reads (zeros past the edges).
// Epilogue: alpha, then the bias and the LoRA term as more K steps on the tensor cores
// (epilogue_products), accumulation (beta·C) on whole matrices and one tensor store (storing element by
// element made the epilogue cost more than the product at 7B, session 11).
// With GLU (1 SiLU, 2 GELU-tanh), the gated MLP's activation backward after the epilogue (common/gemm_interface.glsl):
// down's dx product writes d gate and d up instead of d(act(gate)·up).
// With Q_NF4 or Q_Q8, B is a quantized weight [rows, cols] in packed form (ops/quant.h, QLoRA): binding 1
// holds its blocks of 64 codes, bindings 6-8 the blocks' scales; the driver calls decode_b for each element
// of a weight tile as it loads it (a block layout of 1×64), so the product reads 4 or 8 bits a weight and no
// dequantized copy exists. cols is a multiple of 64 (a block never crosses a row); the weight is bound whole,
// batch 1, and a split-K slice starts at k_begin along the weight instead of at an offset.
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
#define BK 64
#endif
#ifdef B_ALONG_N
#define B_ROW_STRIDE p.b_sk
#else
#define B_ROW_STRIDE p.b_sn
#endif
// The workgroup size is specialization constant 0 (ops/matmul.cpp's kCm2Tiles, LORASTUDIO_CM2_THREADS for
// measurement): the driver spreads each workgroup-scope matrix over whatever subgroups the workgroup has.
layout(local_size_x_id = 0) in;
// K steps a trip of the unclamped loop (specialization constant 1; LORASTUDIO_CM2_UNROLL for measurement).
layout(constant_id = 1) const uint UNROLL = 8u;
// Split-K with the slices' sum in the product itself (specialization constant 2, ops/matmul.cpp cm2_dispatch):
// workgroup z of a tile takes K slice z (a at z·a_sz, b at z·b_sz, k_last the last one's length) and stores its
// f32 sums to partial [S, M, N] (binding 9); the tile's last workgroup to count itself done in tile_done[tile]
// (binding 10, zeroed by the recorder, vk::Recorder::tile_counters) sets the count back to 0, adds the S slices
// in order (deterministic: the order of shaders/matmul_splitk_reduce.comp) and applies the epilogue. No reduce
// dispatch, and no barrier before one: 6-9 us a split product at 0.5B B1 on the H100 (session 34's trace).
layout(constant_id = 2) const uint FIXUP = 0u;

#if defined(Q_NF4) || defined(Q_Q8)
#define QUANT_B
#define B_PACKED
#extension GL_EXT_buffer_reference : require
#endif
#include "common/gemm_interface.glsl"

#ifdef QUANT_B
#define QB_ABSMAX 6
#define QB_SCALES 7
#define QB_MAP 8
#include "common/quant.glsl"
const uint kBlock = 64u;  // values a block (tensor/quant.h)
struct QBlock {
  uint w[kBlock / kQuantValuesPerWord];
};
layout(binding = 1) readonly buffer BufB { QBlock b[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer QBlockRef { QBlock blk; };
// Weight element (row, 64·block[1] + in_block[1]) from its block: code × the block's scale, rounded to f16.
float16_t decode_b(const in QBlockRef bl, const in uint block[2], const in uint in_block[2]) {
#ifdef B_ALONG_N
  const uint row_blocks = p.b_sk / kBlock;
#else
  const uint row_blocks = p.b_sn / kBlock;
#endif
  const uint i = in_block[1];
  const float v = word_value(bl.blk.w[i / kQuantValuesPerWord], i % kQuantValuesPerWord);
  return float16_t(v * block_scale(block[0] * row_blocks + block[1], p.q_offset));
}
#define DECODE_B , decode_b
#else
#define DECODE_B
#endif

// The tile is computed transposed, as ggml-vulkan's mul_mm_cm2 computes its own: the weight operand B is the
// products' A matrix (BN×BK), the activations A their B matrix (BK×BM, read through a transposed view), the
// sums BN×BM, stored transposed.
#define MAT_W coopmat<float16_t, gl_ScopeWorkgroup, BN, BK, gl_MatrixUseA>
#define MAT_X coopmat<float16_t, gl_ScopeWorkgroup, BK, BM, gl_MatrixUseB>
#define ACC coopmat<float, gl_ScopeWorkgroup, BN, BM, gl_MatrixUseAccumulator>
#define OUT coopmat<STORE(C_T), gl_ScopeWorkgroup, BN, BM, gl_MatrixUseAccumulator>

#define ACC_W coopmat<float, gl_ScopeWorkgroup, BN, BK, gl_MatrixUseAccumulator>
#define ACC_X coopmat<float, gl_ScopeWorkgroup, BK, BM, gl_MatrixUseAccumulator>
#define CLAMPED_LAYOUT(name) \
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> name = \
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV)

layout(binding = 9) coherent buffer BufPartial { float partial[]; };
// FIXUP 2 (measurement, LORASTUDIO_CM2_FIXUP=2): the same memory without `coherent` (tensor loads through L1).
layout(binding = 9) buffer BufPartialPlain { float partial_plain[]; };
layout(binding = 10) coherent buffer BufTileDone { uint tile_done[]; };
shared uint last_of_tile;

float first_row_one(const in uint r, const in uint c, const in float e) { return r == 0u ? 1.0 : 0.0; }

// alpha, then the bias and the LoRA term as more K steps of the tile's own shapes (BN×BK by BK×BM) on the
// transposed tile at (m0, n0): acc += bias ⊗ 1 (the f16 bias, exact in f32 sums) and acc += (scale·L)·tᵀ over
// the rank BK at a time (t and L rounded to f16, as every operand of these products is; zeros past the rank and
// the edges). They were added element by element from global memory before (session 18): the 7B q product
// with its adapter and bias took 129 us against 68 for the o product of the same shape. (16-wide steps gave
// NaN in the 128×128 tile on the H100, session 18 call 2; the loop's own shapes are the ones the driver is
// known to handle.)
void epilogue_products(inout ACC acc, const in uint m0, const in uint n0) {
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  if (p.alpha != 1.0) acc = acc * p.alpha;
  if ((p.flags & 1u) != 0u) {
    CLAMPED_LAYOUT(lb);  // the bias as an N×1 matrix
    lb = setTensorLayoutDimensionNV(lb, p.N, 1);
    lb = setTensorLayoutStrideNV(lb, 1, 1);
    MAT_W wb;
    coopMatLoadTensorNV(wb, bias, 0, sliceTensorLayoutNV(lb, n0, BN, 0, BK));
    ACC_X ones = ACC_X(0.0);
    coopMatPerElementNV(ones, ones, first_row_one);
    acc = coopMatMulAdd(wb, MAT_X(ones), acc);
  }
  if ((p.flags & 4u) != 0u) {
    CLAMPED_LAYOUT(lt);  // t [M, rank]
    lt = setTensorLayoutDimensionNV(lt, p.M, p.rank);
    lt = setTensorLayoutStrideNV(lt, p.rank, 1);
    CLAMPED_LAYOUT(ll);  // L [N, rank], or (flag 8) [rank, N]
    const bool by_rank = (p.flags & 8u) != 0u;
    ll = setTensorLayoutDimensionNV(ll, by_rank ? p.rank : p.N, by_rank ? p.N : p.rank);
    ll = setTensorLayoutStrideNV(ll, by_rank ? p.N : p.rank, 1);
    for (uint r0 = 0u; r0 < p.rank; r0 += BK) {
      ACC_W lf;
      ACC_X tf;
      if (by_rank)
        coopMatLoadTensorNV(lf, lora_l, 0, sliceTensorLayoutNV(ll, r0, BK, n0, BN), transposed);
      else
        coopMatLoadTensorNV(lf, lora_l, 0, sliceTensorLayoutNV(ll, n0, BN, r0, BK));
      coopMatLoadTensorNV(tf, lora_t, 0, sliceTensorLayoutNV(lt, m0, BM, r0, BK), transposed);
      acc = coopMatMulAdd(MAT_W(lf * p.lora_scale), MAT_X(tf), acc);
    }
  }
}

#ifdef GLU
// The activation backward on element (r, col) of the transposed tile at (m0, n0) (common/gemm_interface.glsl's
// GLU): d up written here, d gate returned for the tile's store. Element by element, as ggml-vulkan's flash
// attention stores its grouped-query output, so that no more whole matrices live beside the sums.
float glu_element(const in uint r, const in uint col, const in float v, const in uint c_base, const in uint m0,
                  const in uint n0) {
  const uint n = n0 + r, m = m0 + col;
  if (m >= p.M || n >= p.N) return 0.0;
  const uint i = c_base + m * p.c_sm + n;
  const vec2 gr = glu_grads(v, i);
  glu_dup[i] = FROM_F32(C_T, gr.y);
  return gr.x;
}
#endif

// One step of K at k0 through the layouts LX (A as [M, K]) and LW (B as [N, K], or [K, N] with B_ALONG_N).
#ifdef B_ALONG_N
#define LOAD_W(mw, LW, k0) \
  coopMatLoadTensorNV(mw, b, b_base, sliceTensorLayoutNV(LW, k_begin + k0, BK, n0, BN), transposed DECODE_B)
#else
#define LOAD_W(mw, LW, k0) \
  coopMatLoadTensorNV(mw, b, b_base, sliceTensorLayoutNV(LW, n0, BN, k_begin + k0, BK) DECODE_B)
#endif
#define K_STEP(LX, LW, k0)                                                                     \
  {                                                                                            \
    MAT_W mw;                                                                                  \
    MAT_X mx;                                                                                  \
    LOAD_W(mw, LW, k0);                                                                        \
    coopMatLoadTensorNV(mx, a, a_base, sliceTensorLayoutNV(LX, m0, BM, k0, BK), transposed);   \
    acc = coopMatMulAdd(mw, mx, acc);                                                          \
  }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint a_base, b_base, c_base;
  gemm_bases(gl_WorkGroupID.z, a_base, b_base, c_base);
  // Multiples of 8 (ops/matmul.cpp's cm2_fits): said so, the driver may use 16-byte loads.
  a_base &= ~7u;
  const uint a_rows = p.a_sm & ~7u;
#ifdef QUANT_B
  quant_init();
  const uint k_begin = b_base / p.b_sk;  // a split-K slice's first k (b_sk is 1 for B along k)
  b_base = 0u;
  const uint b_rows = (B_ROW_STRIDE) / kBlock;  // in blocks
#else
  const uint k_begin = 0u;
  b_base &= ~7u;
  const uint b_rows = (B_ROW_STRIDE) & ~7u;
#endif
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  // Split-K: the last slice may be shorter than the others (ops/matmul.cpp's cm2_split_k).
  const uint K = p.k_last != 0u && gl_WorkGroupID.z + 1u == gl_NumWorkGroups.z ? p.k_last : p.K;
#ifdef B_ALONG_N
  const uint b_dim0 = k_begin + K, b_dim1 = p.N;
#else
  const uint b_dim0 = p.N, b_dim1 = k_begin + K;
#endif

  ACC acc = ACC(0.0);
  if (m0 + BM <= p.M && n0 + BN <= p.N && K % BK == 0u) {
    tensorLayoutNV<2> lx = createTensorLayoutNV(2);
    tensorLayoutNV<2> lw = createTensorLayoutNV(2);
#ifdef QUANT_B
    lw = setTensorLayoutBlockSizeNV(lw, 1, kBlock);
#endif
    lx = setTensorLayoutDimensionNV(lx, p.M, K);
    lx = setTensorLayoutStrideNV(lx, a_rows, 1);
    lw = setTensorLayoutDimensionNV(lw, b_dim0, b_dim1);
    lw = setTensorLayoutStrideNV(lw, b_rows, 1);
    uint k0 = 0u;
    for (; k0 + UNROLL * BK <= K;) {
      [[unroll]] for (uint j = 0u; j < UNROLL; ++j) {
        K_STEP(lx, lw, k0);
        k0 += BK;
      }
    }
    for (; k0 < K; k0 += BK) K_STEP(lx, lw, k0);
  } else {
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lx =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lw =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
#ifdef QUANT_B
    lw = setTensorLayoutBlockSizeNV(lw, 1, kBlock);
#endif
    lx = setTensorLayoutDimensionNV(lx, p.M, K);
    lx = setTensorLayoutStrideNV(lx, a_rows, 1);
    lw = setTensorLayoutDimensionNV(lw, b_dim0, b_dim1);
    lw = setTensorLayoutStrideNV(lw, b_rows, 1);
    for (uint k0 = 0u; k0 < K; k0 += BK) K_STEP(lx, lw, k0);
  }

  if (FIXUP != 0u && gl_NumWorkGroups.z > 1u) {
    const uint slices = gl_NumWorkGroups.z, slice_size = p.M * p.N;
    CLAMPED_LAYOUT(lp);  // partial sums [S, M, N]
    lp = setTensorLayoutDimensionNV(lp, p.M, p.N);
    lp = setTensorLayoutStrideNV(lp, p.N, 1);
    if (FIXUP == 2u)
      coopMatStoreTensorNV(acc, partial_plain, gl_WorkGroupID.z * slice_size, sliceTensorLayoutNV(lp, m0, BM, n0, BN),
                           transposed);
    else
      coopMatStoreTensorNV(acc, partial, gl_WorkGroupID.z * slice_size, sliceTensorLayoutNV(lp, m0, BM, n0, BN),
                           transposed);
    memoryBarrierBuffer();  // this slice's sums, visible before it counts itself done
    barrier();
    if (gl_LocalInvocationIndex == 0u) {
      const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
      const bool last = atomicAdd(tile_done[tile], 1u) + 1u == slices;
      if (last) tile_done[tile] = 0u;  // every slice has counted: ready for the next product or run
      last_of_tile = last ? 1u : 0u;
    }
    barrier();
    if (last_of_tile == 0u) return;  // (uniform: a shared value after a barrier)
    memoryBarrierBuffer();
    acc = ACC(0.0);
    for (uint s = 0u; s < slices; ++s) {
      ACC part;
      if (FIXUP == 2u)
        coopMatLoadTensorNV(part, partial_plain, s * slice_size, sliceTensorLayoutNV(lp, m0, BM, n0, BN), transposed);
      else
        coopMatLoadTensorNV(part, partial, s * slice_size, sliceTensorLayoutNV(lp, m0, BM, n0, BN), transposed);
      acc = acc + part;
    }
  }
  epilogue_products(acc, m0, n0);
#ifdef GLU
  coopMatPerElementNV(acc, acc, glu_element, c_base, m0, n0);
#endif
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  lc = setTensorLayoutDimensionNV(lc, p.M, p.N);
  lc = setTensorLayoutStrideNV(lc, p.c_sm & ~7u, 1);
  if ((p.flags & 2u) != 0u) {
    OUT old;
    coopMatLoadTensorNV(old, c, c_base, sliceTensorLayoutNV(lc, m0, BM, n0, BN), transposed);
    acc = acc + ACC(old) * p.beta;
  }
  OUT out_tile = OUT(acc);
  coopMatStoreTensorNV(out_tile, c, c_base, sliceTensorLayoutNV(lc, m0, BM, n0, BN), transposed);
}
