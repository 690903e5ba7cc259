#version 450
#extension GL_GOOGLE_include_directive : require
// y [M <= 4, N] = x [M, K] · Wᵀ (+ bias) (+ y) with W a quantized weight [N, K] read in its packed form
// (ops/quant.h: quant_matvec_forward): decoding reads 4 or 8 bits a weight instead of 16. K a multiple of
// 8, so that every 8 consecutive values of a row share one block and one (nf4) or two (q8) words. One
// subgroup per output column n, each lane 8 values a step; subgroupAdd sums the lanes. A_T: activations,
// W_T: the bias (the dtype a quantized layer's bias is kept in), C_T: output.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
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

void main() {
  quant_init();
  const uint n = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID;
  if (n >= p.N) return;  // uniform over the subgroup
  float acc[kMaxRows];
  for (uint m = 0u; m < kMaxRows; ++m) acc[m] = 0.0;
  for (uint k = gl_SubgroupInvocationID * 8u; k < p.K; k += gl_SubgroupSize * 8u) {
    const uint e = n * p.K + k;
    float w[8];
    code_values8(e / 8u * kQuantWordsPer8, w);
    const float s = block_scale(e >> 6, p.offset);
    for (uint m = 0u; m < p.M; ++m) {
      const uint at = (m * p.a_sm + k) / 4u;
      const vec4 x0 = vec4(a4[at]), x1 = vec4(a4[at + 1u]);
      float d = x0.x * w[0];
      d = fma(x0.y, w[1], d);
      d = fma(x0.z, w[2], d);
      d = fma(x0.w, w[3], d);
      d = fma(x1.x, w[4], d);
      d = fma(x1.y, w[5], d);
      d = fma(x1.z, w[6], d);
      d = fma(x1.w, w[7], d);
      acc[m] = fma(d, s, acc[m]);
    }
  }
  for (uint m = 0u; m < p.M; ++m) {
    float v = subgroupAdd(acc[m]);
    if (subgroupElect()) {
      if ((p.flags & 1u) != 0u) v += TO_F32(W_T, bias[n]);
      const uint ci = m * p.c_sm + n;
      if ((p.flags & 2u) != 0u) v += TO_F32(C_T, c[ci]);
      c[ci] = FROM_F32(C_T, v);
    }
  }
}
