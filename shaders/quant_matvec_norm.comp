#version 450
#extension GL_GOOGLE_include_directive : require
// shaders/matvec_norm.comp for quantized weights (QLoRA bases, read in their packed form): RMSNorm of the f32
// residual stream folded into the few-row products that read it. As there, kSplit subgroups per output column
// and consecutive lanes on consecutive pieces of 8 values (nf4: one word of codes, q8: two), so that x̂'s matching
// 8 values are one conflict-free 16- or 32-byte read of the staging; a lane loads kDepth pieces and their block
// scales before it uses any. (A lane on 32 consecutive values, as shaders/quant_matvec16.comp reads them, would
// read the staging with 4- to 8-way bank conflicts.)
//   plain:               y(m, n) = x̂·deq(W)(n)ᵀ (+ bias(n) with flag 1)
//   GLU_SILU, GLU_GELU:  y(m, n) = act(g)·u, g = x̂·deq(Wg)(n)ᵀ and u = x̂·deq(Wu)(n)ᵀ each rounded to ACT_T first
// W_T: the bias's storage type. Q_NF4 or Q_Q8: the weights' format (gate and up share it). K a multiple of 8.
// A workgroup takes column groups wg, wg + groups, ... (ops: one each, or a few workgroups an SM), so that with fewer
// workgroups than column groups the staging is paid once a workgroup and not once a group.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"
#include "common/glu.glsl"
// Pieces a lane loads before it uses any: kDepth (constant 2, 1-8; ops: LORASTUDIO_QMATVEC_PIECES). On the H200
// (session 21, s21b) the 7B gated product took 84.9 us with 2, 91.2 with 4 or 1, 108.2 with 8 (one workgroup a
// column group; nf4; q8 75.4, 85.6, 78.5, 95.6).
#define MATVEC_MAX_DEPTH 8u

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 1) readonly buffer NormW { uint nw_words[]; };  // of type p.nw_type
layout(binding = 4) readonly buffer Bias { STORE(W_T) bias[]; };
layout(binding = 5) writeonly buffer Y { STORE(ACT_T) y[]; };
layout(push_constant) uniform Params {
  uint M, N, K;
  uint w_sn;   // the weights' row stride (elements)
  uint y_sm;   // y's row stride
  float eps;
  uint flags;    // 1: bias
  uint nw_type;  // the norm weight's storage type: 0 f32, 1 f16, 2 bf16
  float offset1, offset2;  // the weights' nf4 absmax offsets
} p;

// The first weight (gate) through common/quant.glsl's bindings, the second (up) through its own.
#define QB_ABSMAX 6
#define QB_SCALES 7
#define QB_MAP 10
#define QUANT_SHARED_MAP
#define ROWS_ID 3
// nf4: a lane's pieces are kPieceWords words of codes, 8, 16 or 32 values (constant 4; ops::detail::nf4_piece_words:
// 1, which on the H100 beat 2 and 4 here); q8's are one piece of 8 values.
#define PIECE_WORDS_ID 4
#include "common/quant.glsl"
#include "common/matvec_norm_stage.glsl"
#if defined(Q_NF4)
layout(binding = 2) readonly buffer W1 { uint w1[]; };
layout(binding = 2) readonly buffer W1x2 { uvec2 w1x2[]; };
layout(binding = 2) readonly buffer W1x4 { uvec4 w1x4[]; };
layout(binding = 3) readonly buffer W2 { uint w2[]; };  // up (GLU); bound to W1 otherwise, unread
layout(binding = 3) readonly buffer W2x2 { uvec2 w2x2[]; };
layout(binding = 3) readonly buffer W2x4 { uvec4 w2x4[]; };
layout(binding = 8) readonly buffer QAbsmax2 { uint qabsmax2[]; };
layout(binding = 9) readonly buffer QScales2 { float qscales2[]; };
// The piece at element e (a multiple of 8·kPieceWords): its words of codes, one load.
uvec4 piece1(uint e) {
  if (kPieceWords == 4u) return w1x4[e >> 5];
  if (kPieceWords == 2u) return uvec4(w1x2[e >> 4], 0u, 0u);
  return uvec4(w1[e >> 3], 0u, 0u, 0u);
}
uvec4 piece2(uint e) {
  if (kPieceWords == 4u) return w2x4[e >> 5];
  if (kPieceWords == 2u) return uvec4(w2x2[e >> 4], 0u, 0u);
  return uvec4(w2[e >> 3], 0u, 0u, 0u);
}
// Its t-th group of 8 values, as common/quant.glsl's piece_values takes it.
uvec2 piece_group(uvec4 piece, uint t) { return uvec2(piece[t], 0u); }
float block_scale2(uint b) { return nf4_block_scale(qabsmax2[b >> 2], b, qscales2[b >> 8], p.offset2); }
#else
layout(binding = 2) readonly buffer W1 { uvec2 w1[]; };
layout(binding = 3) readonly buffer W2 { uvec2 w2[]; };
layout(binding = 8) readonly buffer QAbsmax2 { float qabsmax2[]; };
layout(binding = 9) readonly buffer QScales2 { float qscales2[]; };  // unread: bound alike for both formats
uvec4 piece1(uint e) { return uvec4(w1[e >> 3], 0u, 0u); }
uvec4 piece2(uint e) { return uvec4(w2[e >> 3], 0u, 0u); }
uvec2 piece_group(uvec4 piece, uint t) { return piece.xy; }  // (kPieceWords is 1)
float block_scale2(uint b) { return qabsmax2[b]; }
#endif

#if defined(GLU_SILU)
float act(float g) { return silu(g); }
#elif defined(GLU_GELU)
float act(float g) { return gelu_tanh(g); }
#endif
#if defined(GLU_SILU) || defined(GLU_GELU)
#define GLU 1
#endif

// The pieces at k, k + step, ... as loaded (past K: the row's last piece again, unused).
void load_pieces(uint row, uint k, uint step, inout uvec4 pw[kMaxDepth], inout uvec4 pu[kMaxDepth]) {
  [[unroll]] for (uint i = 0u; i < kMaxDepth; ++i) {
    if (i >= kDepth) break;
    const uint e = row + min(k + i * step, p.K - 8u * kPieceWords);
    pw[i] = piece1(e);
#if defined(GLU)
    pu[i] = piece2(e);
#endif
  }
}

void main() {
  const uint step = split_k_step(), k0 = split_k0(), cols = split_columns();
  // The first group's first pieces are loaded before the map's and the norm's staging, their round trip
  // overlapping it (shaders/matvec_norm.comp); their block scales need the staged map, so they follow it.
  uvec4 pw[kMaxDepth], pu[kMaxDepth];
  [[unroll]] for (uint i = 0u; i < kMaxDepth; ++i) pw[i] = pu[i] = uvec4(0u);
  {
    const uint n = gl_WorkGroupID.x * cols + gl_SubgroupID / kSplit;
    if (n < p.N) load_pieces(n * p.w_sn, k0, step, pw, pu);
  }
  quant_init();
  stage_rows();
  // x̂'s slots (common/matvec_norm_stage.glsl stage_slot) without a division by K a value: a row's groups, and
  // the groups of one word of its pieces
  const uint row_groups = p.K / 8u, plane = row_groups / kPieceWords;
  for (uint g = gl_WorkGroupID.x; g * cols < p.N; g += gl_NumWorkGroups.x) {  // uniform over the workgroup
    const uint n = g * cols + gl_SubgroupID / kSplit;
    const bool live = n < p.N;  // uniform over the subgroup
    const uint row = n * p.w_sn;
    float acc[kMaxRows], acc_up[kMaxRows];
    for (uint m = 0u; m < kMaxRows; ++m) acc[m] = acc_up[m] = 0.0;
    if (live) {
      for (uint k = k0; k < p.K; k += kDepth * step) {
        if (k != k0 || g != gl_WorkGroupID.x) load_pieces(row, k, step, pw, pu);
        float sw[kMaxDepth];
#if defined(GLU)
        float su[kMaxDepth];
#endif
        [[unroll]] for (uint i = 0u; i < kMaxDepth; ++i) {
          if (i >= kDepth) break;
          const uint e = row + min(k + i * step, p.K - 8u * kPieceWords);  // a piece lies in one block of 64
          sw[i] = block_scale(e >> 6, p.offset1);
#if defined(GLU)
          su[i] = block_scale2(e >> 6);
#endif
        }
        [[unroll]] for (uint i = 0u; i < kMaxDepth; ++i) {
          const uint ki = k + i * step;
          if (i >= kDepth || ki >= p.K) break;
          float dw[kMaxRows], du[kMaxRows];  // the piece's sums, before its block scale
          [[unroll]] for (uint t = 0u; t < 4u; ++t) {
            if (t >= kPieceWords) break;
            vec4 wl, wh;
            piece_values(piece_group(pw[i], t), wl, wh);
#if defined(GLU)
            vec4 ul, uh;
            piece_values(piece_group(pu[i], t), ul, uh);
#endif
            [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
              if (m >= p.M) break;
              vec4 xl, xh;
              load_x_slot(m * row_groups + t * plane + ki / (8u * kPieceWords), xl, xh);
              const float d = dot(xl, wl) + dot(xh, wh);
              dw[m] = t == 0u ? d : dw[m] + d;
#if defined(GLU)
              const float u = dot(xl, ul) + dot(xh, uh);
              du[m] = t == 0u ? u : du[m] + u;
#endif
            }
          }
          [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
            if (m >= p.M) break;
            acc[m] = fma(dw[m], sw[i], acc[m]);
#if defined(GLU)
            acc_up[m] = fma(du[m], su[i], acc_up[m]);
#endif
          }
        }
      }
    }
    vec2 sums[kMaxRows];  // (x̂·W(n), and GLU: x̂·Wu(n))
    for (uint m = 0u; m < kMaxRows; ++m) sums[m] = vec2(acc[m], acc_up[m]);
    if (column_sums(sums, live)) {
      [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
        if (m >= p.M) break;
#if defined(GLU)
        y[m * p.y_sm + n] = FROM_F32(ACT_T, act(round_act(sums[m].x)) * round_act(sums[m].y));
#else
        float s = sums[m].x;
        if ((p.flags & 1u) != 0u) s += TO_F32(W_T, bias[n]);
        y[m * p.y_sm + n] = FROM_F32(ACT_T, s);
#endif
      }
    }
    if (kSplit > 1u) barrier();  // the column's first subgroup has read the split sums the next group rewrites
  }
}
