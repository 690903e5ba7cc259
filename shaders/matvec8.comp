#version 450
#extension GL_GOOGLE_include_directive : require
// The few-rows matmul (M <= 4: decoding, LoRA on one token) when rows are K-contiguous and K, the row
// strides and the bindings are multiples of 8 elements: kSplit subgroups per output column n (constant 1:
// 1, 2, 4 or 8, dividing the workgroup's subgroups) each read every kSplit-th 16-byte piece of W's row per lane
// (8 f16/bf16 values, or 2 × 4 f32), the activation rows likewise; subgroupAdd sums the
// lanes and the column's first subgroup the kSplit partial sums, in order. Splitting a column keeps enough
// loads in flight when the columns are few and long (a decoded token's o and down products: at 0.5B one
// subgroup a column left each SM 7 warps of one 512-byte load each, ~0.6 TB/s). Two pieces a lane in flight
// were slower at 7B (session 20, call 3: the o and down products 36.8 -> 45.6 us on the H200). kDepth (constant 2,
// 1-4; ops::detail::matvec_depth, 2 since session 41) pieces of W's row a lane loads before it sums any: the same
// sums in the same order whatever it is. Same bindings, push constants
// and epilogue as shaders/matmul.comp.
#extension GL_EXT_control_flow_attributes : require
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

// A piece of 8 weights as loaded (two uvec4 for f32, one for f16 and bf16), then as floats.
struct RawB { uvec4 a, b; };
RawB load_b(uint e) {
  RawB r;
#if defined(B_IS_F32)
  r.a = b16[e / 4u];
  r.b = b16[e / 4u + 1u];
#else
  r.a = b16[e / 8u];
#endif
  return r;
}
void unpack_b(RawB r, out vec4 lo, out vec4 hi) {
#if defined(B_IS_F32)
  lo = uintBitsToFloat(r.a);
  hi = uintBitsToFloat(r.b);
#elif defined(B_IS_BF16)
  unpack8_bf16(r.a, lo, hi);
#else
  unpack8_half(r.a, lo, hi);
#endif
}

layout(constant_id = 1) const uint kSplit = 1u;
layout(constant_id = 2) const uint kDepth = 1u;
const uint kMaxDepth = 4u;
shared float partial_sums[256u / 8u][kMaxRows];  // [subgroup][row], subgroups of 8 lanes at the least

void main() {
  const uint cols = gl_NumSubgroups / kSplit, part = gl_SubgroupID % kSplit;
  const uint n = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * cols + gl_SubgroupID / kSplit;
  const bool live = n < p.N;  // uniform over the subgroup; every subgroup reaches the barrier below
  float acc[kMaxRows];
  for (uint m = 0u; m < kMaxRows; ++m) acc[m] = 0.0;
  if (live) {
    const uint step = gl_SubgroupSize * 8u * kSplit;
    for (uint k0 = (part * gl_SubgroupSize + gl_SubgroupInvocationID) * 8u; k0 < p.K; k0 += step * kDepth) {
      RawB w[kMaxDepth];
      [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u)
        if (u < kDepth && k0 + u * step < p.K) w[u] = load_b(n * p.b_sn + k0 + u * step);
      [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
        const uint k = k0 + u * step;
        if (u >= kDepth || k >= p.K) break;
        vec4 wl, wh;
        unpack_b(w[u], wl, wh);
        [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
          if (m >= p.M) break;
          vec4 xl, xh;
          load_a(m * p.a_sm + k, xl, xh);
          acc[m] += dot(xl, wl) + dot(xh, wh);
        }
      }
    }
  }
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
    if (m >= p.M) break;
    float s = subgroupAdd(acc[m]);
    if (kSplit == 1u) {
      if (live && subgroupElect()) gemm_store(m, n, s, 0u);
    } else if (subgroupElect()) {
      partial_sums[gl_SubgroupID][m] = s;
    }
  }
  if (kSplit == 1u) return;
  barrier();
  if (!live || part != 0u || !subgroupElect()) return;
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
    if (m >= p.M) break;
    float s = 0.0;
    for (uint i = 0u; i < kSplit; ++i) s += partial_sums[gl_SubgroupID + i][m];
    gemm_store(m, n, s, 0u);
  }
}
