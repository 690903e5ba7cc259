#version 450
#extension GL_GOOGLE_include_directive : require
// The few-rows matmul (M <= 4: decoding, LoRA on one token) when rows are K-contiguous and K, the row
// strides and the bindings are multiples of 8 elements: one subgroup per output column n reads W's row
// 16 bytes per lane per step (8 f16/bf16 values, or 2 × 4 f32), the activation rows likewise, and
// subgroupAdd sums the lanes: no shared memory, no barriers. Same bindings, push constants and
// epilogue as shaders/matmul.comp.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

// The same buffers, 16 bytes at a time.
layout(binding = 0) readonly buffer A16 { uvec4 a16[]; };
layout(binding = 1) readonly buffer B16 { uvec4 b16[]; };

const uint kMaxRows = 4u;

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

void load_a(uint e, out vec4 lo, out vec4 hi) {
#if defined(A_IS_F32)
  lo = uintBitsToFloat(a16[e / 4u]);
  hi = uintBitsToFloat(a16[e / 4u + 1u]);
#else
  unpack8_half(a16[e / 8u], lo, hi);
#endif
}

void load_b(uint e, out vec4 lo, out vec4 hi) {
#if defined(B_IS_F32)
  lo = uintBitsToFloat(b16[e / 4u]);
  hi = uintBitsToFloat(b16[e / 4u + 1u]);
#elif defined(B_IS_BF16)
  unpack8_bf16(b16[e / 8u], lo, hi);
#else
  unpack8_half(b16[e / 8u], lo, hi);
#endif
}

void main() {
  const uint n = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * gl_NumSubgroups + gl_SubgroupID;
  if (n >= p.N) return;  // uniform over the subgroup
  float acc[kMaxRows];
  for (uint m = 0u; m < kMaxRows; ++m) acc[m] = 0.0;
  for (uint k = gl_SubgroupInvocationID * 8u; k < p.K; k += gl_SubgroupSize * 8u) {
    vec4 wl, wh;
    load_b(n * p.b_sn + k, wl, wh);
    for (uint m = 0u; m < p.M; ++m) {
      vec4 xl, xh;
      load_a(m * p.a_sm + k, xl, xh);
      acc[m] += dot(xl, wl) + dot(xh, wh);
    }
  }
  for (uint m = 0u; m < p.M; ++m) {
    float s = subgroupAdd(acc[m]);
    if (subgroupElect()) gemm_store(m, n, s, 0u);
  }
}
