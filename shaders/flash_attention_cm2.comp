#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention on tensor cores through GL_NV_cooperative_matrix2: the training attention of
// shaders/flash_attention_coopmat.comp (same bindings, push constants and outputs) with workgroup-scope
// matrices that the driver loads from global memory itself, and the softmax's element-wise steps, row
// maxima and row sums done on the matrices in registers (coopMatPerElementNV, coopMatReduceNV) instead
// of through shared memory. f16 × f16 → f32 products; f32 q, k, v and o are loaded as accumulator matrices and
// converted to f16 operands, f16 ones (IO_F16) straight into the operands (kDirect); the backward reads dO's f16
// copy (shaders/flash_delta.comp), the gradients are f32. Block sizes are specialization constants. Head dims D a
// multiple of 16 up to DMAX; rows and columns past T, S or D load as zeros and are not stored (clamped tensor
// layouts).
//   FORWARD        workgroup: BR queries of head h; one pass over the key blocks with the output rescaled
//                  as each block raises a row's maximum (online softmax); writes o and each row's lse.
//                  Also over KV caches whose fill level `past` is read from the device (IO_F16). With SPLIT,
//                  workgroups z = b·splits + split each take their share of the key blocks and write the
//                  unnormalized output [splits·B, H, T, D] and each row's (max, sum of exponentials)
//                  [splits·B, H, T, 2], f32, which shaders/flash_combine.comp adds up into o and lse.
//   BACKWARD_DQ    workgroup: BR queries; with delta = rowsum(do ∘ o) from shaders/flash_delta.comp,
//                  p = exp(scale q·k - lse), ds = p (do·v - delta), dq = scale Σ ds k; with `splits` > 1,
//                  each workgroup's share of the key blocks into partials [splits·B, H, T, D].
//   BACKWARD_DKDV  workgroup: BC keys and one query head; dv = Σ_t p do_t, dk = scale Σ_t ds q_t, per query
//                  head and split ([splits·B, H, S, D], summed by attention_group_sum) or straight into dk, dv.
// Query t sees keys j <= past + t (past = S - T); query head h reads kv head g = h / (H / KV).
// Compiled by a glslang that knows the extension (ls_kernel_cm2); ops/attention_flash.cpp picks it where
// the device offers VK_NV_cooperative_matrix2.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#include "common/types.glsl"

layout(local_size_x_id = 0) in;  // 128 or 256 (ops/attention_flash.cpp)

// Specialization constants (ops/attention_flash.cpp's FlashCm2Knobs):
layout(constant_id = 1) const uint BR = 32;  // the workgroup's queries (FORWARD, BACKWARD_DQ), or a step's (BACKWARD_DKDV)
layout(constant_id = 2) const uint BC = 64;  // the keys of a step, or the workgroup's keys (BACKWARD_DKDV)
// f16 inputs (IO_F16, and dO in the backward) loaded by the driver straight into the operand matrices, not into an
// accumulator matrix converted to one (a change of layout among the workgroup's subgroups).
layout(constant_id = 3) const uint kDirect = 1u;
// FORWARD, BACKWARD_DQ: workgroup x takes query block (blocks - 1 - x), so that the blocks with the most keys
// (the last queries, under the causal mask) start first and the short ones fill the tail.
layout(constant_id = 4) const uint kHeavyFirst = 1u;

#define ACC(R, C) coopmat<float, gl_ScopeWorkgroup, R, C, gl_MatrixUseAccumulator>
#define MAT_A(R, C) coopmat<float16_t, gl_ScopeWorkgroup, R, C, gl_MatrixUseA>
#define MAT_B(R, C) coopmat<float16_t, gl_ScopeWorkgroup, R, C, gl_MatrixUseB>
#if defined(IO_F16)
#define IN_T float16_t
#else
#define IN_T float
#endif
#define IN(R, C) coopmat<IN_T, gl_ScopeWorkgroup, R, C, gl_MatrixUseAccumulator>
// Finite, so that kMasked - kMasked is 0, not NaN, and exp(kMasked - m) is 0.
const float kMasked = -1.0e30;

layout(push_constant) uniform Params {
  uint B, T, S, H, KV, D;
  float scale;
  uint per_head;
  uint past_on_device;  // FORWARD: past = past_buf[0], k and v are KV caches of capacity S (else past = S - T)
  uint splits;          // backward: workgroups z = b·splits + split, each over its share of the other operand
} p;

// Rows of one head of a [B, L, heads, D] tensor: L × D, row stride heads·D; zeros past the edges.
#define HEAD_LAYOUT(name, L, heads)                                               \
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> name =               \
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);           \
  name = setTensorLayoutDimensionNV(name, L, p.D);                                \
  name = setTensorLayoutStrideNV(name, (heads) * p.D, 1)

// Operands from a block of R rows of one head (from r0, layout L at base, elements of type ET), read by the driver: BT = its
// transpose (DMAX × R, the B operand of scores) through a transposed view, and, LOAD_BOTH, BN = the block itself
// (R × DMAX, the B operand of a gradient), read a second time as it is. (Reading it once and transposing among
// the workgroup with coopMatTransposeNV was slower on the H100: 7B backward 686 against 349 us, call s13b.)
#define LOAD_T(ET, BT, buf, base, L, r0, R)                                                   \
  {                                                                                           \
    coopmat<ET, gl_ScopeWorkgroup, DMAX, R, gl_MatrixUseAccumulator> in_;                     \
    coopMatLoadTensorNV(in_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX), transposed);  \
    BT = MAT_B(DMAX, R)(in_);                                                                 \
  }
#define LOAD_BOTH(ET, BT, BN, buf, base, L, r0, R)                                    \
  {                                                                                   \
    LOAD_T(ET, BT, buf, base, L, r0, R);                                              \
    coopmat<ET, gl_ScopeWorkgroup, R, DMAX, gl_MatrixUseAccumulator> n_;              \
    coopMatLoadTensorNV(n_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));       \
    BN = MAT_B(R, DMAX)(n_);                                                          \
  }
// The same from an f16 buffer: straight into the operands where kDirect, else as above.
#define LOAD_T16(BT, buf, base, L, r0, R)                                                                 \
  if (kDirect != 0u)                                                                                    \
    coopMatLoadTensorNV(BT, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX), transposed);             \
  else                                                                                                  \
    LOAD_T(float16_t, BT, buf, base, L, r0, R)
#define LOAD_BOTH16(BT, BN, buf, base, L, r0, R)                                                          \
  if (kDirect != 0u) {                                                                                  \
    coopMatLoadTensorNV(BT, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX), transposed);             \
    coopMatLoadTensorNV(BN, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                         \
  } else                                                                                                \
    LOAD_BOTH(float16_t, BT, BN, buf, base, L, r0, R)
// An A operand (R × DMAX) from rows r0.. of an f16 buffer.
#define LOAD_A16(MA, buf, base, L, r0, R)                                                                 \
  if (kDirect != 0u)                                                                                    \
    coopMatLoadTensorNV(MA, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                         \
  else {                                                                                                \
    coopmat<float16_t, gl_ScopeWorkgroup, R, DMAX, gl_MatrixUseAccumulator> in_;                        \
    coopMatLoadTensorNV(in_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                        \
    MA = MAT_A(R, DMAX)(in_);                                                                           \
  }
// The inputs q, k, v: f16 (IO_F16) through the above, f32 through an accumulator matrix.
#if defined(IO_F16)
#define LOAD_T_IN(BT, buf, base, L, r0, R) LOAD_T16(BT, buf, base, L, r0, R)
#define LOAD_BOTH_IN(BT, BN, buf, base, L, r0, R) LOAD_BOTH16(BT, BN, buf, base, L, r0, R)
#define LOAD_A_IN(MA, buf, base, L, r0, R) LOAD_A16(MA, buf, base, L, r0, R)
#else
#define LOAD_T_IN(BT, buf, base, L, r0, R) LOAD_T(float, BT, buf, base, L, r0, R)
#define LOAD_BOTH_IN(BT, BN, buf, base, L, r0, R) LOAD_BOTH(float, BT, BN, buf, base, L, r0, R)
#define LOAD_A_IN(MA, buf, base, L, r0, R)                                                                \
  {                                                                                                     \
    IN(R, DMAX) in_;                                                                                    \
    coopMatLoadTensorNV(in_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                        \
    MA = MAT_A(R, DMAX)(in_);                                                                           \
  }
#endif
// The value block of keys r0.. (R × DMAX) as a B operand.
#if defined(IO_F16)
#define LOAD_V(VB, buf, base, L, r0, R)                                                                   \
  if (kDirect != 0u)                                                                                    \
    coopMatLoadTensorNV(VB, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                         \
  else {                                                                                                \
    IN(R, DMAX) in_;                                                                                    \
    coopMatLoadTensorNV(in_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                        \
    VB = MAT_B(R, DMAX)(in_);                                                                           \
  }
#else
#define LOAD_V(VB, buf, base, L, r0, R)                                                                   \
  {                                                                                                     \
    IN(R, DMAX) in_;                                                                                    \
    coopMatLoadTensorNV(in_, buf, base, sliceTensorLayoutNV(L, r0, R, 0, DMAX));                        \
    VB = MAT_B(R, DMAX)(in_);                                                                           \
  }
#endif

// Query block x of the grid's, heaviest first where kHeavyFirst (FORWARD, BACKWARD_DQ).
uint query_block() { return kHeavyFirst != 0u ? gl_NumWorkGroups.x - 1u - gl_WorkGroupID.x : gl_WorkGroupID.x; }

float max_of(const in float a, const in float b) { return max(a, b); }
float sum_of(const in float a, const in float b) { return a + b; }
float first_of(const in float a, const in float b) { return a; }
float exp_of(const in uint r, const in uint c, const in float e) { return exp(e); }
float log_of(const in uint r, const in uint c, const in float e) { return log(e); }
float max_elem(const in uint r, const in uint c, const in float e, const in float other) { return max(e, other); }
float inverse_of(const in uint r, const in uint c, const in float e) { return e == 0.0 ? 0.0 : 1.0 / e; }

// Element (r, c) of a block of queries from t0 (rows) and keys from j0 (columns): kept where key j is seen by
// query t, else kMasked.
float mask_scores(const in uint r, const in uint c, const in float e, const in uint t0, const in uint j0,
                  const in uint past) {
  const uint t = t0 + r, j = j0 + c;
  return j <= past + t && j < p.S ? e : kMasked;
}

// exp(e) where query t0 + r sees key j0 + c, else 0.
float exp_seen(const in uint r, const in uint c, const in float e, const in uint t0, const in uint j0,
               const in uint past) {
  const uint t = t0 + r, j = j0 + c;
  return j <= past + t && j < p.S ? exp(e) : 0.0;
}

// The same with keys as rows (from j0) and queries as columns (from t0), queries past T unseen.
float exp_seen_by_col(const in uint r, const in uint c, const in float e, const in uint j0, const in uint t0,
                      const in uint past) {
  const uint t = t0 + c, j = j0 + r;
  return t < p.T && j < p.S && j <= past + t ? exp(e) : 0.0;
}

#if defined(FORWARD)
layout(binding = 0) readonly buffer Q { IN_T q[]; };
layout(binding = 1) readonly buffer K { IN_T k[]; };
layout(binding = 2) readonly buffer V { IN_T v[]; };
#if defined(SPLIT)
layout(binding = 3) writeonly buffer O { float o[]; };       // the split's unnormalized output
layout(binding = 4) writeonly buffer Lse { float lse[]; };   // its rows' (max, sum): [.., T, 2]
#else
layout(binding = 3) writeonly buffer O { IN_T o[]; };
layout(binding = 4) writeonly buffer Lse { float lse[]; };
#endif
layout(binding = 5) readonly buffer Past { int past_buf[]; };

// Column 0 of row r holds the row's value: written to lse[base + (t0 + r)·stride + slot] for rows inside T.
float store_row(const in uint r, const in uint c, const in float e, const in uint base, const in uint t0,
                const in uint stride, const in uint slot) {
  if (c == 0u && t0 + r < p.T) lse[base + (t0 + r) * stride + slot] = e;
  return e;
}

void main() {
  const uint q0 = query_block() * BR, h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits;
  const uint g = h / (p.H / p.KV);
  const uint past = p.past_on_device != 0u ? uint(max(past_buf[0], 0)) : p.S - p.T;
  const uint n_keys = min(past + min(q0 + BR, p.T), p.S);
  const uint blocks = (n_keys + BC - 1u) / BC;  // this split's share of them (all without SPLIT: splits = 1)
  const uint k_begin = split * blocks / p.splits * BC, k_end = min((split + 1u) * blocks / p.splits * BC, n_keys);
  HEAD_LAYOUT(lq, p.T, p.H);
  // Keys past n_keys (a KV cache's rows not written yet, or stale ones) load as zeros: a masked key's
  // probability is 0, but 0 times a NaN left in such a row is not.
  HEAD_LAYOUT(lk, n_keys, p.KV);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  const uint q_base = (b * p.T * p.H + h) * p.D, k_base = (b * p.S * p.KV + g) * p.D;

  IN(BR, DMAX) q_in;
  coopMatLoadTensorNV(q_in, q, q_base, sliceTensorLayoutNV(lq, q0, BR, 0, DMAX));
  // The scale folded into q before rounding to f16 (scores come out scaled).
  const MAT_A(BR, DMAX) qa = MAT_A(BR, DMAX)(ACC(BR, DMAX)(q_in) * p.scale);
  ACC(BR, DMAX) acc = ACC(BR, DMAX)(0.0);
  // Each row's running maximum and sum of exponentials, the same in every column of the row.
  ACC(BR, BC) m = ACC(BR, BC)(kMasked), l = ACC(BR, BC)(0.0);
  const MAT_B(BC, BC) ones = MAT_B(BC, BC)(1.0);
  // (Loading the next block's K and this block's V before the softmax was slower on the H200: 7B 55 -> 65 us,
  // session 25.)
  for (uint k0 = k_begin; k0 < k_end; k0 += BC) {
    MAT_B(DMAX, BC) kt;
    LOAD_T_IN(kt, k, k_base, lk, k0, BC);
    ACC(BR, BC) s = coopMatMulAdd(qa, kt, ACC(BR, BC)(0.0));
    if (k0 + BC > past + q0 + 1u || k0 + BC > p.S)  // a block on the diagonal or at the end of the keys
      coopMatPerElementNV(s, s, mask_scores, q0, k0, past);
    ACC(BR, BC) row_max, m_old = m, pr, rescale;
    coopMatReduceNV(row_max, s, gl_CooperativeMatrixReduceRowNV, max_of);
    coopMatPerElementNV(m, row_max, max_elem, m_old);
    coopMatPerElementNV(pr, s - m, exp_of);
    coopMatPerElementNV(rescale, m_old - m, exp_of);
    // Row sums as a product with ones on the tensor cores, of the f16 probabilities the output sums.
    const MAT_A(BR, BC) pa = MAT_A(BR, BC)(pr);
    l = coopMatMulAdd(pa, ones, rescale * l);
    ACC(BR, DMAX) rescale_rows;
    coopMatReduceNV(rescale_rows, rescale, gl_CooperativeMatrixReduceRowNV, first_of);
    acc = acc * rescale_rows;
    MAT_B(BC, DMAX) vb;
    LOAD_V(vb, v, k_base, lk, k0, BC);
    acc = coopMatMulAdd(pa, vb, acc);
  }
#if defined(SPLIT)
  // A split without keys leaves m at kMasked and l, acc at 0: it weighs nothing in the combination.
  const uint part = (split * p.B + b) * p.H + h;
  coopMatPerElementNV(m, m, store_row, part * p.T * 2u, q0, 2u, 0u);
  coopMatPerElementNV(l, l, store_row, part * p.T * 2u, q0, 2u, 1u);
  HEAD_LAYOUT(lpart, p.T, 1u);
  coopMatStoreTensorNV(acc, o, part * p.T * p.D, sliceTensorLayoutNV(lpart, q0, BR, 0, DMAX));
#else
  ACC(BR, BC) row_lse;
  coopMatPerElementNV(row_lse, l, log_of);
  row_lse = row_lse + m;
  coopMatPerElementNV(row_lse, row_lse, store_row, (b * p.H + h) * p.T, q0, 1u, 0u);
  ACC(BR, DMAX) inv_l;
  coopMatReduceNV(inv_l, l, gl_CooperativeMatrixReduceRowNV, first_of);
  coopMatPerElementNV(inv_l, inv_l, inverse_of);
  const IN(BR, DMAX) out_tile = IN(BR, DMAX)(acc * inv_l);
  coopMatStoreTensorNV(out_tile, o, q_base, sliceTensorLayoutNV(lq, q0, BR, 0, DMAX));
#endif
}

#elif defined(BACKWARD_DQ)
layout(binding = 0) readonly buffer Q { IN_T q[]; };
layout(binding = 1) readonly buffer K { IN_T k[]; };
layout(binding = 2) readonly buffer V { IN_T v[]; };
// Binding 3 (o) is unused: delta comes computed (binding 7), so that the dk/dv kernel, which reads it too, need
// not wait for this one (session 19: one stage for both).
layout(binding = 4) readonly buffer DO { float16_t do_[]; };  // dO's f16 copy (shaders/flash_delta.comp)
layout(binding = 5) readonly buffer Lse { float lse[]; };
layout(binding = 6) writeonly buffer DQ { float dq[]; };
layout(binding = 7) readonly buffer Delta { float delta[]; };

// Row r's statistics lse[base + t0 + r] and delta[base + t0 + r] (0 past T) in every column.
float load_lse(const in uint r, const in uint c, const in float e, const in uint base, const in uint t0) {
  return t0 + r < p.T ? lse[base + t0 + r] : 0.0;
}
float load_delta(const in uint r, const in uint c, const in float e, const in uint base, const in uint t0) {
  return t0 + r < p.T ? delta[base + t0 + r] : 0.0;
}

void main() {
  const uint q0 = query_block() * BR, h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits, out_b = split * p.B + b;
  const uint g = h / (p.H / p.KV), past = p.S - p.T, stat = (b * p.H + h) * p.T;
  HEAD_LAYOUT(lq, p.T, p.H);
  HEAD_LAYOUT(lk, p.S, p.KV);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  const uint q_base = (b * p.T * p.H + h) * p.D, k_base = (b * p.S * p.KV + g) * p.D;

  MAT_A(BR, DMAX) qa, doa;
  LOAD_A_IN(qa, q, q_base, lq, q0, BR);
  LOAD_A16(doa, do_, q_base, lq, q0, BR);
  ACC(BR, BC) dl = ACC(BR, BC)(0.0), row_lse = ACC(BR, BC)(0.0);
  coopMatPerElementNV(dl, dl, load_delta, stat, q0);
  coopMatPerElementNV(row_lse, row_lse, load_lse, stat, q0);

  ACC(BR, DMAX) acc = ACC(BR, DMAX)(0.0);
  const uint n_keys = min(past + min(q0 + BR, p.T), p.S);
  const uint blocks = (n_keys + BC - 1u) / BC;
  const uint k_end = min((split + 1u) * blocks / p.splits * BC, n_keys);
  for (uint k0 = split * blocks / p.splits * BC; k0 < k_end; k0 += BC) {
    ACC(BR, BC) s, pr, dp;
    MAT_B(DMAX, BC) kt, vt;
    MAT_B(BC, DMAX) kb;
    LOAD_BOTH_IN(kt, kb, k, k_base, lk, k0, BC);
    s = coopMatMulAdd(qa, kt, ACC(BR, BC)(0.0));
    coopMatPerElementNV(pr, s * p.scale - row_lse, exp_seen, q0, k0, past);
    LOAD_T_IN(vt, v, k_base, lk, k0, BC);
    dp = coopMatMulAdd(doa, vt, ACC(BR, BC)(0.0));
    acc = coopMatMulAdd(MAT_A(BR, BC)(pr * (dp - dl)), kb, acc);
  }
  acc = acc * p.scale;
  if (p.per_head != 0u) {  // split partials [splits·B, H, T, D], summed by attention_group_sum
    HEAD_LAYOUT(ld, p.T, 1u);
    coopMatStoreTensorNV(acc, dq, (out_b * p.H + h) * p.T * p.D, sliceTensorLayoutNV(ld, q0, BR, 0, DMAX));
  } else {
    coopMatStoreTensorNV(acc, dq, q_base, sliceTensorLayoutNV(lq, q0, BR, 0, DMAX));
  }
}

#elif defined(BACKWARD_DKDV)
layout(binding = 0) readonly buffer Q { IN_T q[]; };
layout(binding = 1) readonly buffer K { IN_T k[]; };
layout(binding = 2) readonly buffer V { IN_T v[]; };
layout(binding = 3) readonly buffer DO { float16_t do_[]; };  // dO's f16 copy (shaders/flash_delta.comp)
layout(binding = 4) readonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Delta { float delta[]; };
layout(binding = 6) writeonly buffer DKOut { float dk[]; };
layout(binding = 7) writeonly buffer DVOut { float dv[]; };

// The step's queries' lse and delta (0 past T), staged for the element functions below.
shared float lse_s[BR], delta_s[BR];

// Scores transposed (keys × queries): e - the lse of query column c.
float minus_col_lse(const in uint r, const in uint c, const in float e) { return e - lse_s[c]; }
// ds = p (dp - the delta of query column c).
float ds_of_col(const in uint r, const in uint c, const in float dp, const in float pr) {
  return pr * (dp - delta_s[c]);
}

void main() {
  const uint j0 = gl_WorkGroupID.x * BC, h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits, out_b = split * p.B + b;
  const uint g = h / (p.H / p.KV), past = p.S - p.T, stat = (b * p.H + h) * p.T;
  HEAD_LAYOUT(lq, p.T, p.H);
  HEAD_LAYOUT(lk, p.S, p.KV);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  const uint q_base = (b * p.T * p.H + h) * p.D, k_base = (b * p.S * p.KV + g) * p.D;

  MAT_A(BC, DMAX) ka, va;
  LOAD_A_IN(ka, k, k_base, lk, j0, BC);
  LOAD_A_IN(va, v, k_base, lk, j0, BC);
  ACC(BC, DMAX) dk_acc = ACC(BC, DMAX)(0.0), dv_acc = ACC(BC, DMAX)(0.0);
  const uint t_start = (j0 > past ? (j0 - past) / BR : 0u) * BR;  // the first block with a query that sees j0
  const uint blocks = (p.T - min(t_start, p.T) + BR - 1u) / BR;   // this split's share of them
  const uint t_end = min(t_start + (split + 1u) * blocks / p.splits * BR, p.T);
  for (uint t0 = t_start + split * blocks / p.splits * BR; t0 < t_end; t0 += BR) {
    barrier();  // every element function of the last step has read the stats
    if (gl_LocalInvocationID.x < BR) {
      const uint t = t0 + gl_LocalInvocationID.x;
      lse_s[gl_LocalInvocationID.x] = t < p.T ? lse[stat + t] : 0.0;
      delta_s[gl_LocalInvocationID.x] = t < p.T ? delta[stat + t] : 0.0;
    }
    barrier();
    ACC(BC, BR) s, pr, dp, ds;
    MAT_B(DMAX, BR) qt, dot;
    MAT_B(BR, DMAX) qb, dob;
    LOAD_BOTH_IN(qt, qb, q, q_base, lq, t0, BR);
    s = coopMatMulAdd(ka, qt, ACC(BC, BR)(0.0));
    coopMatPerElementNV(s, s * p.scale, minus_col_lse);
    coopMatPerElementNV(pr, s, exp_seen_by_col, j0, t0, past);
    LOAD_BOTH16(dot, dob, do_, q_base, lq, t0, BR);
    dp = coopMatMulAdd(va, dot, ACC(BC, BR)(0.0));
    coopMatPerElementNV(ds, dp, ds_of_col, pr);
    dv_acc = coopMatMulAdd(MAT_A(BC, BR)(pr), dob, dv_acc);
    dk_acc = coopMatMulAdd(MAT_A(BC, BR)(ds), qb, dk_acc);
  }
  dk_acc = dk_acc * p.scale;
  // Per query head [splits·B, H, S, D], or [B, S, KV, D].
  if (p.per_head != 0u) {
    HEAD_LAYOUT(ld, p.S, 1u);
    const uint base = (out_b * p.H + h) * p.S * p.D;
    coopMatStoreTensorNV(dk_acc, dk, base, sliceTensorLayoutNV(ld, j0, BC, 0, DMAX));
    coopMatStoreTensorNV(dv_acc, dv, base, sliceTensorLayoutNV(ld, j0, BC, 0, DMAX));
  } else {
    coopMatStoreTensorNV(dk_acc, dk, k_base, sliceTensorLayoutNV(lk, j0, BC, 0, DMAX));
    coopMatStoreTensorNV(dv_acc, dv, k_base, sliceTensorLayoutNV(lk, j0, BC, 0, DMAX));
  }
}
#endif
