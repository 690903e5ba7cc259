#version 450
#extension GL_GOOGLE_include_directive : require
// y [M <= 4, N] = x [M, K] · Wᵀ (+ bias) (+ y) with W a quantized weight [N, K] read in its packed form
// (ops/quant.h: quant_matvec_forward): decoding reads 4 or 8 bits a weight instead of 16. K a multiple of
// 8, so that every 8 consecutive values of a row share one block and one (nf4) or two (q8) words. One
// subgroup per kCols output columns, each lane 16 bytes of codes a column a step (32 nf4 or 16 q8 values, one block) when
// K allows, else 8 values; subgroupAdd sums the lanes. A_T: activations, W_T: the bias (the dtype a
// quantized layer's bias is kept in), C_T: output. (With one word a lane, the H100 decoded the 7B shape's
// nf4 weights at ~0.6 TB/s.)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common/types.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, c_sm;
  uint flags;  // 1: bias, 2: accumulate into y
  float offset;
} p;

layout(binding = 0) readonly buffer BufA { STORE(A_T) a[]; };
#define VEC4_f32 vec4
#define VEC4_f16 f16vec4
layout(binding = 0) readonly buffer BufA4 { LS_CAT(VEC4_, A_T) a4[]; };  // K and a_sm are multiples of 8
layout(binding = 1) buffer BufC { STORE(C_T) c[]; };
layout(binding = 2) readonly buffer BufBias { STORE(W_T) bias[]; };
#define QB_CODES 3
#define QB_ABSMAX 4
#define QB_SCALES 5
#define QB_MAP 6
#include "common/quant.glsl"

const uint kMaxRows = 4u;
// Columns a subgroup computes: at 7B a column of nf4 codes is only 1.8 KB, and with one column a subgroup
// the kernel's fixed costs (quant_init's barrier, the sums) held it at ~0.55 TB/s (H100, session 12). Their
// loads are independent; a column past N reads the last one again and stores nothing.
const uint kCols = 4u;

// acc[col][m] += row m of x · column n's 8 or VALS values from k (s: their block's scale).
#define ADD_ROWS(col, w, count, k, s)                                    \
  for (uint m = 0u; m < p.M; ++m) {                                    \
    const uint at = (m * p.a_sm + (k)) / 4u;                           \
    float d = 0.0;                                                     \
    [[unroll]] for (uint j = 0u; j < (count) / 4u; ++j) {              \
      const vec4 x = vec4(a4[at + j]);                                 \
      d = fma(x.x, w[4u * j], d);                                      \
      d = fma(x.y, w[4u * j + 1u], d);                                 \
      d = fma(x.z, w[4u * j + 2u], d);                                 \
      d = fma(x.w, w[4u * j + 3u], d);                                 \
    }                                                                  \
    acc[col][m] = fma(d, s, acc[col][m]);                                  \
  }

void main() {
  quant_init();
  const uint n0 = ((gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID) * kCols;
  if (n0 >= p.N) return;  // uniform over the subgroup
  float acc[kCols][kMaxRows];
  [[unroll]] for (uint col = 0u; col < kCols; ++col)
    [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) acc[col][m] = 0.0;
  const uint VALS = kQuantValuesPer16B;
  const uint wide_end = p.K % VALS == 0u ? p.K : 0u;  // rows start on a 16-byte boundary of the codes
  for (uint k = gl_SubgroupInvocationID * VALS; k < wide_end; k += gl_SubgroupSize * VALS) {
    [[unroll]] for (uint col = 0u; col < kCols; ++col) {
      const uint e = min(n0 + col, p.N - 1u) * p.K + k;
      float w[VALS];
      code_values16B(qcodes4[e / VALS], w);
      const float s = block_scale(e >> 6, p.offset);
      ADD_ROWS(col, w, VALS, k, s)
    }
  }
  for (uint k = wide_end + gl_SubgroupInvocationID * 8u; k < p.K; k += gl_SubgroupSize * 8u) {
    [[unroll]] for (uint col = 0u; col < kCols; ++col) {
      const uint e = min(n0 + col, p.N - 1u) * p.K + k;
      float w[8];
      code_values8(e / 8u * kQuantWordsPer8, w);
      const float s = block_scale(e >> 6, p.offset);
      ADD_ROWS(col, w, 8u, k, s)
    }
  }
  [[unroll]] for (uint col = 0u; col < kCols; ++col) {
    const uint n = n0 + col;
    for (uint m = 0u; m < p.M; ++m) {
      float v = subgroupAdd(acc[col][m]);
      if (subgroupElect() && n < p.N) {
        if ((p.flags & 1u) != 0u) v += TO_F32(W_T, bias[n]);
        const uint ci = m * p.c_sm + n;
        if ((p.flags & 2u) != 0u) v += TO_F32(C_T, c[ci]);
        c[ci] = FROM_F32(C_T, v);
      }
    }
  }
}
