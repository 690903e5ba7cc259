#version 450
#extension GL_GOOGLE_include_directive : require
// y [M <= 4, N] = x [M, K] · Wᵀ (+ bias) (+ y) with W a quantized weight [N, K] read in its packed form, as
// shaders/quant_matvec.comp, for K a multiple of 64 (whole blocks a row, so each 16-byte load of codes lies in
// one block and has one scale): a subgroup computes kRows consecutive outputs; each lane loads 16 bytes of codes
// of every one of those rows a step (nf4 32 values, q8 16), and each value of x it reads serves all kRows rows.
// The one-word kernel read 4 bytes of codes and 16 of x a lane a step and streamed the 7B shape's weights at
// ~0.6 TB/s (session 16, s16a: 5.6 of 8.6 ms a decode token). A_T: activations, W_T: the bias, C_T: output.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint kRows = 1u;  // outputs a subgroup, 1 .. kMaxSubgroupRows

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, c_sm;
  uint flags;  // 1: bias, 2: accumulate into y
  float offset;
} p;

layout(binding = 0) readonly buffer BufA { STORE(A_T) a[]; };
#define VEC4_f32 vec4
#define VEC4_f16 f16vec4
layout(binding = 0) readonly buffer BufA4 { LS_CAT(VEC4_, A_T) a4[]; };  // K and a_sm are multiples of 64
layout(binding = 1) buffer BufC { STORE(C_T) c[]; };
layout(binding = 2) readonly buffer BufBias { STORE(W_T) bias[]; };
#define QB_CODES 3
#define QB_ABSMAX 4
#define QB_SCALES 5
#define QB_MAP 6
#include "common/quant.glsl"
layout(binding = QB_CODES) readonly buffer QCodes16 { uvec4 qcodes16[]; };

const uint kMaxRows = 4u, kMaxSubgroupRows = 4u;
const uint kValsPer16 = 4u * kQuantValuesPerWord;  // values of one 16-byte load of codes

// Σ over one word's values x[i]·value(i), in two chains (independent sums; a 256-entry table of value pairs,
// one lookup a byte, made the 7B nf4 decode slower: 117.3 against 138.1 tok/s, session 16, s16f).
float word_dot(const in float x[kQuantValuesPerWord], uint word) {
  float even = 0.0, odd = 0.0;
  [[unroll]] for (uint i = 0u; i < kQuantValuesPerWord; i += 2u) {
    even = fma(x[i], word_value(word, i), even);
    odd = fma(x[i + 1u], word_value(word, i + 1u), odd);
  }
  return even + odd;
}

void main() {
  quant_init();
  const uint group = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID;
  const uint n0 = group * kRows;
  if (n0 >= p.N) return;  // uniform over the subgroup
  float acc[kMaxRows][kMaxSubgroupRows];
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m)
    [[unroll]] for (uint r = 0u; r < kMaxSubgroupRows; ++r) acc[m][r] = 0.0;
  for (uint k = gl_SubgroupInvocationID * kValsPer16; k < p.K; k += gl_SubgroupSize * kValsPer16) {
    uvec4 codes[kMaxSubgroupRows];
    float scale[kMaxSubgroupRows];
    [[unroll]] for (uint r = 0u; r < kRows; ++r) {
      const uint e = min(n0 + r, p.N - 1u) * p.K + k;  // rows past N repeat the last one, never stored
      codes[r] = qcodes16[e / kValsPer16];
      scale[r] = block_scale(e >> 6, p.offset);
    }
    // Rows of x fully unrolled (a constant index into acc keeps it in registers), each value of x loaded once.
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
      if (m >= p.M) break;
      const uint at = m * p.a_sm + k;
      float d[kMaxSubgroupRows];
      [[unroll]] for (uint r = 0u; r < kMaxSubgroupRows; ++r) d[r] = 0.0;
      [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        float x[kQuantValuesPerWord];
        [[unroll]] for (uint h = 0u; h < kQuantValuesPerWord / 4u; ++h) {
          const vec4 x4 = vec4(a4[(at + w * kQuantValuesPerWord) / 4u + h]);
          x[4u * h] = x4.x, x[4u * h + 1u] = x4.y, x[4u * h + 2u] = x4.z, x[4u * h + 3u] = x4.w;
        }
        [[unroll]] for (uint r = 0u; r < kRows; ++r) d[r] += word_dot(x, codes[r][w]);
      }
      [[unroll]] for (uint r = 0u; r < kRows; ++r) acc[m][r] = fma(d[r], scale[r], acc[m][r]);
    }
  }
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {
    if (m >= p.M) break;
    [[unroll]] for (uint r = 0u; r < kRows; ++r) {
      float v = subgroupAdd(acc[m][r]);
      const uint n = n0 + r;
      if (subgroupElect() && n < p.N) {
        if ((p.flags & 1u) != 0u) v += TO_F32(W_T, bias[n]);
        const uint ci = m * p.c_sm + n;
        if ((p.flags & 2u) != 0u) v += TO_F32(C_T, c[ci]);
        c[ci] = FROM_F32(C_T, v);
      }
    }
  }
}
