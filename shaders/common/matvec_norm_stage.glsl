// The staging the norm-fused decode products share (shaders/matvec_norm.comp, matvec_norm_qkv.comp): the M rows of
// x (f32, [M, K] contiguous) normalised as shaders/rms_norm.comp does and rounded to ACT_T into shared memory,
// the 16-byte weight loads, and the sums of an output column split over kSplit subgroups (constant 1: 1, 2, 4 or 8,
// dividing the workgroup's subgroups; ops::detail::matvec_split, as shaders/matvec8.comp). The includer declares binding X (vec4 x4[]), NormW (uint nw_words[]) and the
// push constants M, K, eps, nw_type, and defines ACT_T (ACT_IS_F16) and W_T (W_IS_F32 / W_IS_BF16).
#include "common/reduce.glsl"
#include "common/f16_bits.glsl"

// The rows (tokens) the loops over rows run to: 4, or the constant ROWS_ID (set by the includer), where the host gives
// the product's own M (ops::detail::rows_constant) so that no registers are kept for rows it does not have.
#if defined(ROWS_ID)
layout(constant_id = ROWS_ID) const uint kMaxRows = 4u;
#else
const uint kMaxRows = 4u;
#endif
// x̂ staged 8 values to a uvec4: f16 pairs, or f32 over two uvec4s. 16 KiB.
const uint kStageWords = 1024u;
shared uvec4 xs[kStageWords];

// A lane's piece of a weight row: kPieceWords groups of 8 values (1, or the constant PIECE_WORDS_ID where the includer
// sets it: 1, 2 or 4), consecutive lanes on consecutive pieces. With more than one, x̂'s groups are staged permuted:
// group t of a row's piece j at slot t·(K/8/kPieceWords) + j of the row, so that the 16-byte reads of a subgroup's
// t-th groups are consecutive (conflict-free) and not kPieceWords·16 bytes apart. K a multiple of 8·kPieceWords.
#if defined(PIECE_WORDS_ID)
layout(constant_id = PIECE_WORDS_ID) const uint kPieceWords = 1u;
#else
const uint kPieceWords = 1u;
#endif
uint stage_slot(uint g) {  // g: an 8-value group of the M·K staged values
  if (kPieceWords == 1u) return g;
  const uint per_row = p.K / 8u, r = g % per_row;
  return (g - r) + (r % kPieceWords) * (per_row / kPieceWords) + r / kPieceWords;
}
shared float rstd_of[kMaxRows];

void unpack8_half(uvec4 r, out vec4 lo, out vec4 hi) {
  lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
  hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
}
void unpack8_bf16(uvec4 r, out vec4 lo, out vec4 hi) {
  lo = vec4(uintBitsToFloat(r.x << 16), uintBitsToFloat(r.x & 0xffff0000u), uintBitsToFloat(r.y << 16),
            uintBitsToFloat(r.y & 0xffff0000u));
  hi = vec4(uintBitsToFloat(r.z << 16), uintBitsToFloat(r.z & 0xffff0000u), uintBitsToFloat(r.w << 16),
            uintBitsToFloat(r.w & 0xffff0000u));
}

// A piece of 8 weights: LOAD_W loads and unpacks it; LOAD_RAW keeps it as loaded (raw: two uvec4 for f32, one for
// f16 and bf16) for unpack_w later, so that a load whose value is not used before a barrier can stay in flight
// across it (the first piece, loaded before the staging: matvec_norm_qkv, quant_matvec_norm; in matvec_norm's GLU
// product that made 11.4 us 13.6 at 0.5B and 84.4 us 87.5 at 7B on the H200, session 29, so it loads as before).
struct RawW { uvec4 a, b; };
#if defined(W_IS_F32)
#define LOAD_W(buf, e, lo, hi) lo = uintBitsToFloat(buf[(e) / 4u]); hi = uintBitsToFloat(buf[(e) / 4u + 1u])
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 4u]; r.b = buf[(e) / 4u + 1u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { lo = uintBitsToFloat(r.a); hi = uintBitsToFloat(r.b); }
#elif defined(W_IS_BF16)
#define LOAD_W(buf, e, lo, hi) unpack8_bf16(buf[(e) / 8u], lo, hi)
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 8u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { unpack8_bf16(r.a, lo, hi); }
#else
#define LOAD_W(buf, e, lo, hi) unpack8_half(buf[(e) / 8u], lo, hi)
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 8u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { unpack8_half(r.a, lo, hi); }
#endif

float norm_weight(uint k) {
  if (p.nw_type == 0u) return uintBitsToFloat(nw_words[k]);
  const uint half_bits = (nw_words[k / 2u] >> (16u * (k & 1u))) & 0xffffu;
  return p.nw_type == 1u ? unpackHalf2x16(half_bits).x : uintBitsToFloat(half_bits << 16);
}

// x̂'s 8 values at staging slot s (stage_slot).
void load_x_slot(uint s, out vec4 lo, out vec4 hi) {
#if defined(ACT_IS_F16)
  unpack8_half(xs[s], lo, hi);
#else
  lo = uintBitsToFloat(xs[2u * s]);
  hi = uintBitsToFloat(xs[2u * s + 1u]);
#endif
}
// x̂'s 8 values from element e (a multiple of 8) of the staged rows.
void load_x(uint e, out vec4 lo, out vec4 hi) { load_x_slot(stage_slot(e / 8u), lo, hi); }

// f rounded to ACT_T, as a float: the value the unfused path stores (nearest even; integer arithmetic, since a
// float -> float16_t -> float round trip in registers may be folded away by a driver).
float round_act(float f) {
#if defined(ACT_IS_F16)
  return unpackHalf2x16(f16_from_f32(floatBitsToUint(f))).x;
#else
  return f;
#endif
}

void stage_rows() {
  const uint tid = gl_LocalInvocationID.x, K4 = p.K / 4u;
  for (uint m = 0u; m < p.M; ++m) {
    float sum_sq = 0.0;
    for (uint i = tid; i < K4; i += gl_WorkGroupSize.x) {
      vec4 v = x4[m * K4 + i];
      sum_sq += dot(v, v);
    }
    const float r = 1.0 / sqrt(workgroup_sum(sum_sq) / float(p.K) + p.eps);
    if (tid == 0u) rstd_of[m] = r;
  }
  barrier();
  for (uint g = tid; g < p.M * p.K / 8u; g += gl_WorkGroupSize.x) {
    const uint e = g * 8u, m = e / p.K, k = e % p.K;
    const float r = rstd_of[m];
    const vec4 lo = x4[e / 4u], hi = x4[e / 4u + 1u];
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    for (uint i = 0u; i < 8u; ++i) v[i] = (v[i] * r) * norm_weight(k + i);
    const uint s = stage_slot(g);
#if defined(ACT_IS_F16)
    xs[s] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
                  packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
#else
    xs[2u * s] = floatBitsToUint(vec4(v[0], v[1], v[2], v[3]));
    xs[2u * s + 1u] = floatBitsToUint(vec4(v[4], v[5], v[6], v[7]));
#endif
  }
  barrier();
}


layout(constant_id = 1) const uint kSplit = 1u;
// Pieces of a weight row a lane loads before it sums any (constant 2, 1-4: ops::detail::matvec_depth; matvec_norm.comp)
layout(constant_id = 2) const uint kDepth = 1u;
#if !defined(MATVEC_MAX_DEPTH)
#define MATVEC_MAX_DEPTH 4u
#endif
const uint kMaxDepth = MATVEC_MAX_DEPTH;  // (an includer on smaller pieces may allow more)
shared vec2 split_sums[256u / 8u][kMaxRows];  // [subgroup][row], subgroups of 8 lanes at the least

// The workgroup's columns, this subgroup's column and its part of the column's K pieces.
uint split_columns() { return gl_NumSubgroups / kSplit; }
uint split_part() { return gl_SubgroupID % kSplit; }
// The first K index of this lane, and the stride between its pieces (of 8·kPieceWords values).
uint split_k0() { return (split_part() * gl_SubgroupSize + gl_SubgroupInvocationID) * 8u * kPieceWords; }
uint split_k_step() { return gl_SubgroupSize * 8u * kPieceWords * kSplit; }

// A column's two sums per row over its lanes and subgroups (in order), into acc of the lane that returns true
// (one per live column). Every invocation of the workgroup calls it (a barrier when the column is split).
// (Loops over the rows run to the constant kMaxRows, so that acc is indexed by constants and stays in registers.)
bool column_sums(inout vec2 acc[kMaxRows], bool live) {
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
    if (m >= p.M) break;
    acc[m] = vec2(subgroupAdd(acc[m].x), subgroupAdd(acc[m].y));
  }
  if (kSplit == 1u) return live && subgroupElect();
  if (subgroupElect()) {
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
      if (m >= p.M) break;
      split_sums[gl_SubgroupID][m] = acc[m];
    }
  }
  barrier();
  if (!live || split_part() != 0u || !subgroupElect()) return false;
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
    if (m >= p.M) break;
    vec2 t = vec2(0.0);
    for (uint i = 0u; i < kSplit; ++i) t += split_sums[gl_SubgroupID + i][m];
    acc[m] = t;
  }
  return true;
}
