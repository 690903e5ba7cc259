#version 450
#extension GL_GOOGLE_include_directive : require
// A decoded token's attention inputs in one pass: the input norm (common/matvec_norm_stage.glsl), the q, k and v
// products with their biases, RoPE on q and k, and k and v into the KV cache: what ops::norm_matvec_forward three
// times and ops::rope_kv_cache_forward do, with the same roundings (each product rounded to ACT_T, as stored,
// before it is rotated) and shaders/rope_kv.comp's rotation bit for bit. One subgroup per pair (i, i + D/2) of a
// head of q, k or v (or two pairs, kPairs below): heads [0, H) of q, [H, H + KV) of k, then v. Token m: position pos[m], cache row
// offsets[slot] + m (rows past the cache's end skipped, as rope_kv.comp does).
// With Q_NF4 or Q_Q8 the three weights are quantized (QLoRA bases, read packed as shaders/quant_matvec_norm.comp
// reads them: a piece's sum times its block's scale) and W_T is the biases' type.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"
#include "common/rope_angle.glsl"

layout(local_size_x_id = 0) in;  // 256 (ops: LORASTUDIO_QKV_THREADS=64 or 128, measurement)
#define ROWS_ID 4  // common/matvec_norm_stage.glsl's rows

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 1) readonly buffer NormW { uint nw_words[]; };  // of type p.nw_type
#if defined(Q_NF4) || defined(Q_Q8)
#define PACKED 1
// Pieces of a row a lane loads before it sums any (kDepth, 1-8: ops::norm_qkv_rope_forward gives 4): four times as
// many fit the registers as of 16-byte pieces.
#define MATVEC_MAX_DEPTH 8u
#endif
#if !defined(PACKED)
layout(binding = 2) readonly buffer Wq { uvec4 wq[]; };
layout(binding = 3) readonly buffer Wk { uvec4 wk[]; };
layout(binding = 4) readonly buffer Wv { uvec4 wv[]; };
#endif
layout(binding = 5) readonly buffer Bq { STORE(W_T) bq[]; };
layout(binding = 6) readonly buffer Bk { STORE(W_T) bk[]; };
layout(binding = 7) readonly buffer Bv { STORE(W_T) bv[]; };
layout(binding = 8) readonly buffer Positions { int pos[]; };
layout(binding = 9) readonly buffer InvFreq { float inv_freq[]; };
layout(binding = 10) writeonly buffer Q { STORE(ACT_T) q[]; };
layout(binding = 11) writeonly buffer KCache { STORE(ACT_T) k_cache[]; };
layout(binding = 12) writeonly buffer VCache { STORE(ACT_T) v_cache[]; };
layout(binding = 13) readonly buffer Offsets { int offsets[]; };
layout(push_constant) uniform Params {
  uint M, K;
  uint heads, kv_heads;
  uint half_d;      // D / 2
  uint cache_rows;  // the caches' rows
  int slot;
  float eps;
  uint flags;       // 1: biases
  uint nw_type;     // as shaders/matvec_norm.comp
  float offset_q, offset_k, offset_v;  // PACKED, nf4: the weights' absmax offsets
} p;

#include "common/matvec_norm_stage.glsl"

#if defined(PACKED)
// q's scales through common/quant.glsl's bindings, k's and v's through their own; a piece of 8 values is one word of
// codes (nf4) or two (q8), held as a uvec2.
#define QB_ABSMAX 14
#define QB_SCALES 17
#define QB_MAP 20
#define QUANT_SHARED_MAP
#include "common/quant.glsl"
#if defined(Q_NF4)
layout(binding = 2) readonly buffer Wq { uint wq[]; };
layout(binding = 3) readonly buffer Wk { uint wk[]; };
layout(binding = 4) readonly buffer Wv { uint wv[]; };
layout(binding = 15) readonly buffer AbsmaxK { uint absmax_k[]; };
layout(binding = 16) readonly buffer AbsmaxV { uint absmax_v[]; };
layout(binding = 18) readonly buffer ScalesK { float scales_k[]; };
layout(binding = 19) readonly buffer ScalesV { float scales_v[]; };
#define PIECE(buf, e) uvec2(buf[(e) >> 3], 0u)
float piece_scale(uint which, uint b) {
  if (which == 0u) return block_scale(b, p.offset_q);
  if (which == 1u) return nf4_block_scale(absmax_k[b >> 2], b, scales_k[b >> 8], p.offset_k);
  return nf4_block_scale(absmax_v[b >> 2], b, scales_v[b >> 8], p.offset_v);
}
#else
layout(binding = 2) readonly buffer Wq { uvec2 wq[]; };
layout(binding = 3) readonly buffer Wk { uvec2 wk[]; };
layout(binding = 4) readonly buffer Wv { uvec2 wv[]; };
layout(binding = 15) readonly buffer AbsmaxK { float absmax_k[]; };
layout(binding = 16) readonly buffer AbsmaxV { float absmax_v[]; };
layout(binding = 18) readonly buffer ScalesK { float scales_k[]; };  // unread: bound alike for both formats
layout(binding = 19) readonly buffer ScalesV { float scales_v[]; };
#define PIECE(buf, e) buf[(e) >> 3]
float piece_scale(uint which, uint b) { return which == 0u ? qabsmax[b] : which == 1u ? absmax_k[b] : absmax_v[b]; }
#endif
#define Piece uvec2
#else
#define Piece RawW
#endif

// The two rows' pieces of 8 values at k, as loaded (which product's weights: uniform over the subgroup).
void load_pair(uint which, uint lo, uint hi, uint k, inout Piece a, inout Piece b) {
#if defined(PACKED)
  if (which == 0u) {
    a = PIECE(wq, lo * p.K + k);
    b = PIECE(wq, hi * p.K + k);
  } else if (which == 1u) {
    a = PIECE(wk, lo * p.K + k);
    b = PIECE(wk, hi * p.K + k);
  } else {
    a = PIECE(wv, lo * p.K + k);
    b = PIECE(wv, hi * p.K + k);
  }
#else
  if (which == 0u) {
    LOAD_RAW(wq, lo * p.K + k, a);
    LOAD_RAW(wq, hi * p.K + k, b);
  } else if (which == 1u) {
    LOAD_RAW(wk, lo * p.K + k, a);
    LOAD_RAW(wk, hi * p.K + k, b);
  } else {
    LOAD_RAW(wv, lo * p.K + k, a);
    LOAD_RAW(wv, hi * p.K + k, b);
  }
#endif
}

// Pairs a subgroup computes side by side (constant 3: 1 or 2; ops::norm_qkv_rope_forward): pairs (i, i + D/2) and
// (i + 1, i + 1 + D/2) of one head, their loads in flight together. Two a subgroup halve the workgroups, so that a
// pass whose registers allow two workgroups an SM runs in one wave (7B: 288 workgroups of one pair a subgroup, on
// 264 places of an H100). Only without a split (kSplit 1).
layout(constant_id = 3) const uint kPairs = 1u;
const uint kMaxPairs = 2u;

void main() {
  const uint unit = gl_WorkGroupID.x * split_columns() + gl_SubgroupID / kSplit;
  const uint pair0 = unit * kPairs;  // the unit's first pair; with two, i is even and i + 1 in the same head
  const uint head = pair0 / p.half_d, i0 = pair0 % p.half_d, D = 2u * p.half_d;
  const bool live = head < p.heads + 2u * p.kv_heads;  // uniform over the subgroup
  // which product, and the head's rows in it
  const uint which = head < p.heads ? 0u : head < p.heads + p.kv_heads ? 1u : 2u;
  const uint h = which == 0u ? head : which == 1u ? head - p.heads : head - p.heads - p.kv_heads;
  const uint lo0 = h * D + i0;  // pair j's rows: lo0 + j and lo0 + j + D/2
  const uint k0 = split_k0(), step = split_k_step();
  // kDepth pieces of each row a lane loads before it sums any (the same sums in the same order); the first batch
  // before the norm's staging, its round trip overlapping it (matvec_norm.comp).
  Piece ra[kMaxPairs * kMaxDepth], rb[kMaxPairs * kMaxDepth];
  [[unroll]] for (uint j = 0u; j < kMaxPairs; ++j) {
    [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
#if defined(PACKED)
      ra[j * kMaxDepth + u] = rb[j * kMaxDepth + u] = uvec2(0u);
#else
      ra[j * kMaxDepth + u] = rb[j * kMaxDepth + u] = RawW(uvec4(0u), uvec4(0u));
#endif
      if (live && j < kPairs && u < kDepth && k0 + u * step < p.K)
        load_pair(which, lo0 + j, lo0 + j + p.half_d, k0 + u * step, ra[j * kMaxDepth + u], rb[j * kMaxDepth + u]);
    }
  }
#if defined(PACKED)
  quant_init();  // the map's staging (the pieces' scales need it)
#endif
  stage_rows();
  float acc_lo[kMaxPairs * kMaxRows], acc_hi[kMaxPairs * kMaxRows];  // float, not vec2 (as shaders/matvec_norm.comp)
  for (uint m = 0u; m < kMaxPairs * kMaxRows; ++m) acc_lo[m] = acc_hi[m] = 0.0;
  if (live) {
    for (uint kb = k0; kb < p.K; kb += step * kDepth) {
      if (kb != k0)
        [[unroll]] for (uint j = 0u; j < kMaxPairs; ++j)
          [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u)
            if (j < kPairs && u < kDepth && kb + u * step < p.K)
              load_pair(which, lo0 + j, lo0 + j + p.half_d, kb + u * step, ra[j * kMaxDepth + u],
                        rb[j * kMaxDepth + u]);
      [[unroll]] for (uint j = 0u; j < kMaxPairs; ++j) {
        if (j >= kPairs) break;
        const uint lo = lo0 + j, hi = lo + p.half_d;
#if defined(PACKED)
        float sa[kMaxDepth], sb[kMaxDepth];  // the pieces' block scales (a piece lies in one block: K % 8 == 0)
        [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
          const uint k = min(kb + u * step, p.K - 8u);
          sa[u] = u < kDepth ? piece_scale(which, (lo * p.K + k) >> 6) : 0.0;
          sb[u] = u < kDepth ? piece_scale(which, (hi * p.K + k) >> 6) : 0.0;
        }
#endif
        [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
          const uint k = kb + u * step;
          if (u >= kDepth || k >= p.K) break;
          vec4 al, ah, bl, bh;
#if defined(PACKED)
          piece_values(ra[j * kMaxDepth + u], al, ah);
          piece_values(rb[j * kMaxDepth + u], bl, bh);
#else
          unpack_w(ra[j * kMaxDepth + u], al, ah);
          unpack_w(rb[j * kMaxDepth + u], bl, bh);
#endif
          [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
            if (m >= p.M) break;
            vec4 xl, xh;
            load_x(m * p.K + k, xl, xh);
#if defined(PACKED)
            acc_lo[j * kMaxRows + m] = fma(dot(xl, al) + dot(xh, ah), sa[u], acc_lo[j * kMaxRows + m]);
            acc_hi[j * kMaxRows + m] = fma(dot(xl, bl) + dot(xh, bh), sb[u], acc_hi[j * kMaxRows + m]);
#else
            acc_lo[j * kMaxRows + m] += dot(xl, al) + dot(xh, ah);
            acc_hi[j * kMaxRows + m] += dot(xl, bl) + dot(xh, bh);
#endif
          }
        }
      }
    }
  }
  const uint d0 = p.slot >= 0 ? uint(max(offsets[p.slot], 0)) : 0u;
  [[unroll]] for (uint j = 0u; j < kMaxPairs; ++j) {
    if (j >= kPairs) break;
    const uint i = i0 + j, lo = lo0 + j, hi = lo + p.half_d;
    vec2 acc[kMaxRows];  // (row lo, row hi)
    for (uint m = 0u; m < kMaxRows; ++m) acc[m] = vec2(acc_lo[j * kMaxRows + m], acc_hi[j * kMaxRows + m]);
    if (!column_sums(acc, live)) continue;  // (with two pairs, kSplit is 1: no barrier inside)
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
      if (m >= p.M) break;
      float x0 = acc[m].x, x1 = acc[m].y;
      if ((p.flags & 1u) != 0u) {
        x0 += TO_F32(W_T, which == 0u ? bq[lo] : which == 1u ? bk[lo] : bv[lo]);
        x1 += TO_F32(W_T, which == 0u ? bq[hi] : which == 1u ? bk[hi] : bv[hi]);
      }
      x0 = round_act(x0);  // the products as stored before RoPE reads them
      x1 = round_act(x1);
      if (which == 2u) {
        if (d0 + m < p.cache_rows) {
          const uint c = (d0 + m) * p.kv_heads * D;
          v_cache[c + lo] = FROM_F32(ACT_T, x0);
          v_cache[c + hi] = FROM_F32(ACT_T, x1);
        }
        continue;
      }
      precise float a = float(pos[m]) * inv_freq[i];
      vec2 sc = sin_cos(a);
      const float r0 = x0 * sc.y - x1 * sc.x, r1 = x1 * sc.y + x0 * sc.x;
      if (which == 0u) {
        const uint row = m * p.heads * D;
        q[row + lo] = FROM_F32(ACT_T, r0);
        q[row + hi] = FROM_F32(ACT_T, r1);
      } else if (d0 + m < p.cache_rows) {
        const uint c = (d0 + m) * p.kv_heads * D;
        k_cache[c + lo] = FROM_F32(ACT_T, r0);
        k_cache[c + hi] = FROM_F32(ACT_T, r1);
      }
    }
  }
}
