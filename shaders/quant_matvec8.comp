#version 450
#extension GL_GOOGLE_include_directive : require
// y [M <= 4, N] (+)= x [M, K] · deq(W)ᵀ (+ bias) with W a quantized weight [N, K] read in its packed form, laid
// out as shaders/matvec8.comp reads a plain weight: kSplit subgroups per output column n (constant 1: 1, 2, 4 or 8,
// dividing the workgroup's subgroups), each lane a piece of 8 values at a time (nf4: one word of codes, q8: two),
// consecutive lanes on consecutive pieces, so that x's matching 8 values are one coalesced 16- or 32-byte load.
// (shaders/quant_matvec16.comp's lane reads 32 consecutive values of x, each load of a subgroup spread over 16-32
// cache lines.) A subgroup computes kCols adjacent columns; a lane loads kPieces pieces of each and their block
// scales before it uses any. K a multiple of 8: a piece lies in one block of 64. A_T: the activations, W_T: the
// bias, C_T: the output.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint kSplit = 1u;

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, c_sm;
  uint flags;  // 1: bias, 2: accumulate into y
  float offset;
} p;

layout(binding = 0) readonly buffer A16 { uvec4 a16[]; };  // K and a_sm multiples of 8
layout(binding = 1) buffer BufC { STORE(C_T) c[]; };
layout(binding = 2) readonly buffer BufBias { STORE(W_T) bias[]; };
#define QB_ABSMAX 4
#define QB_SCALES 5
#define QB_MAP 6
#define QUANT_SHARED_MAP
#include "common/quant.glsl"
// nf4: a lane's pieces are kPieceWords words of codes, 8, 16 or 32 values, one load each (constant 4;
// ops::detail::nf4_piece_words: 2 where K is a multiple of 16; K a multiple of 8·kPieceWords); q8's are one piece
// of 8 values.
layout(constant_id = 4) const uint kPieceWords = 1u;
#if defined(Q_NF4)
layout(binding = 3) readonly buffer QPieces { uint qpieces[]; };
layout(binding = 3) readonly buffer QPieces2 { uvec2 qpieces2[]; };
layout(binding = 3) readonly buffer QPieces4 { uvec4 qpieces4[]; };
uvec4 load_piece(uint e) {
  if (kPieceWords == 4u) return qpieces4[e >> 5];
  if (kPieceWords == 2u) return uvec4(qpieces2[e >> 4], 0u, 0u);
  return uvec4(qpieces[e >> 3], 0u, 0u, 0u);
}
uvec2 piece_group(uvec4 piece, uint t) { return uvec2(piece[t], 0u); }  // its t-th 8 values, for piece_values
#else
layout(binding = 3) readonly buffer QPieces { uvec2 qpieces[]; };
uvec4 load_piece(uint e) { return uvec4(qpieces[e >> 3], 0u, 0u); }
uvec2 piece_group(uvec4 piece, uint t) { return piece.xy; }  // (kPieceWords is 1)
#endif

const uint kPieces = 2u;
// The rows the loops over rows run to: 4, or the product's own M (constant 3; ops::detail::rows_constant).
layout(constant_id = 3) const uint kMaxRows = 4u;
// Adjacent output columns a subgroup computes side by side, each lane reading x's 8 values once for all of them
// (ops/quant.cpp's choice, 1 to kMaxCols).
layout(constant_id = 2) const uint kCols = 1u;
const uint kMaxCols = 4u;

void load_a(uint e, out vec4 lo, out vec4 hi) {
#if defined(A_IS_F32)
  lo = uintBitsToFloat(a16[e / 4u]);
  hi = uintBitsToFloat(a16[e / 4u + 1u]);
#else
  const uvec4 r = a16[e / 8u];
  lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
  hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
#endif
}

// [subgroup][column, row], subgroups of 8 lanes at the least
shared float partial_sums[256u / 8u][kMaxCols * kMaxRows];

void store(uint m, uint n, float v) {
  if ((p.flags & 1u) != 0u) v += TO_F32(W_T, bias[n]);
  const uint ci = m * p.c_sm + n;
  if ((p.flags & 2u) != 0u) v += TO_F32(C_T, c[ci]);
  c[ci] = FROM_F32(C_T, v);
}

// (Loops over the rows run to the constant kMaxRows, so that acc is indexed by constants and stays in registers.)
void main() {
  quant_init();
  const uint cols = gl_NumSubgroups / kSplit, part = gl_SubgroupID % kSplit;
  const uint n0 = ((gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * cols + gl_SubgroupID / kSplit) * kCols;
  const bool live = n0 < p.N;  // uniform over the subgroup; every subgroup reaches the barrier below
  float acc[kCols * kMaxRows];
  [[unroll]] for (uint i = 0u; i < kCols * kMaxRows; ++i) acc[i] = 0.0;
  if (live) {
    const uint piece_len = 8u * kPieceWords, step = gl_SubgroupSize * piece_len * kSplit;
    uint row[kCols];
    [[unroll]] for (uint c = 0u; c < kCols; ++c) row[c] = min(n0 + c, p.N - 1u) * p.K;  // past N: read, unused
    for (uint k = (part * gl_SubgroupSize + gl_SubgroupInvocationID) * piece_len; k < p.K; k += kPieces * step) {
      uvec4 piece[kPieces * kCols];
      float scale[kPieces * kCols];
      [[unroll]] for (uint i = 0u; i < kPieces; ++i) {
        [[unroll]] for (uint c = 0u; c < kCols; ++c) {
          // past K: the row's last piece again, unused; a piece lies in one block of 64
          const uint e = row[c] + min(k + i * step, p.K - piece_len);
          piece[i * kCols + c] = load_piece(e);
          scale[i * kCols + c] = block_scale(e >> 6, p.offset);
        }
      }
      [[unroll]] for (uint i = 0u; i < kPieces; ++i) {
        const uint ki = k + i * step;
        if (ki >= p.K) break;
        [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
          if (m >= p.M) break;
          float d[kMaxCols];  // the piece's sums, before its block scale
          [[unroll]] for (uint t = 0u; t < 4u; ++t) {
            if (t >= kPieceWords) break;
            vec4 xl, xh;
            load_a(m * p.a_sm + ki + 8u * t, xl, xh);
            [[unroll]] for (uint c = 0u; c < kCols; ++c) {
              vec4 wl, wh;
              piece_values(piece_group(piece[i * kCols + c], t), wl, wh);
              const float s = dot(xl, wl) + dot(xh, wh);
              d[c] = t == 0u ? s : d[c] + s;
            }
          }
          [[unroll]] for (uint c = 0u; c < kCols; ++c)
            acc[c * kMaxRows + m] = fma(d[c], scale[i * kCols + c], acc[c * kMaxRows + m]);
        }
      }
    }
  }
  [[unroll]] for (uint c = 0u; c < kCols; ++c) {
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
      if (m >= p.M) break;
      const float s = subgroupAdd(acc[c * kMaxRows + m]);
      if (kSplit == 1u) {
        if (live && n0 + c < p.N && subgroupElect()) store(m, n0 + c, s);
      } else if (subgroupElect()) {
        partial_sums[gl_SubgroupID][c * kMaxRows + m] = s;
      }
    }
  }
  if (kSplit == 1u) return;
  barrier();
  if (!live || part != 0u || !subgroupElect()) return;
  [[unroll]] for (uint c = 0u; c < kCols; ++c) {
    if (n0 + c >= p.N) break;
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
      if (m >= p.M) break;
      float s = 0.0;
      for (uint i = 0u; i < kSplit; ++i) s += partial_sums[gl_SubgroupID + i][c * kMaxRows + m];
      store(m, n0 + c, s);
    }
  }
}
