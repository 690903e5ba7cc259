#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm folded into the few-row products that read its output (decoding: q, k and v after the input
// norm; gate and up after the post-attention norm), so that the norm needs no pass and no barrier of its
// own. Each workgroup normalises the M rows of x (the f32 residual stream) as shaders/rms_norm.comp does,
//   rstd = 1 / sqrt(mean(x^2) + eps),  x̂ = (x * rstd) * w,
// rounds x̂ to the activation type ACT_T (the unfused path's stored h) and stages it in shared memory; then
// one subgroup per output column n reads W's row 16 bytes per lane per step, as shaders/matvec8.comp.
//   plain:               y(m, n) = x̂·W(n)ᵀ (+ bias(n) with flag 1)
//   GLU_SILU, GLU_GELU:  y(m, n) = act(g)·u, g = x̂·Wg(n)ᵀ and u = x̂·Wu(n)ᵀ each rounded to ACT_T first, as
//                        the unfused path stores gate and up before shaders/silu_mul.comp reads them.
// W_T: the storage type of the weights, the norm's weight and the bias. x: [M, K] rows contiguous; M*K fits
// the staging (kStageWords); K, the weights' row stride and their bindings multiples of 8 elements.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"
#include "common/reduce.glsl"
#include "common/glu.glsl"
#include "common/f16_bits.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 1) readonly buffer NormW { STORE(W_T) nw[]; };
layout(binding = 2) readonly buffer W1 { uvec4 w1[]; };
layout(binding = 3) readonly buffer W2 { uvec4 w2[]; };  // up (GLU); bound to W1 otherwise, unread
layout(binding = 4) readonly buffer Bias { STORE(W_T) bias[]; };
layout(binding = 5) writeonly buffer Y { STORE(ACT_T) y[]; };
layout(push_constant) uniform Params {
  uint M, N, K;
  uint w_sn;   // the weights' row stride (elements)
  uint y_sm;   // y's row stride
  float eps;
  uint flags;  // 1: bias
} p;

const uint kMaxRows = 4u;
// x̂ staged 8 values to a uvec4: f16 pairs, or f32 over two uvec4s. 16 KiB.
const uint kStageWords = 1024u;
shared uvec4 xs[kStageWords];
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

#if defined(W_IS_F32)
#define LOAD_W(buf, e, lo, hi) lo = uintBitsToFloat(buf[(e) / 4u]); hi = uintBitsToFloat(buf[(e) / 4u + 1u])
#elif defined(W_IS_BF16)
#define LOAD_W(buf, e, lo, hi) unpack8_bf16(buf[(e) / 8u], lo, hi)
#else
#define LOAD_W(buf, e, lo, hi) unpack8_half(buf[(e) / 8u], lo, hi)
#endif

// x̂'s 8 values from element e (a multiple of 8) of the staged rows.
void load_x(uint e, out vec4 lo, out vec4 hi) {
#if defined(ACT_IS_F16)
  unpack8_half(xs[e / 8u], lo, hi);
#else
  lo = uintBitsToFloat(xs[e / 4u]);
  hi = uintBitsToFloat(xs[e / 4u + 1u]);
#endif
}

// f rounded to ACT_T, as a float: the value the unfused path stores (nearest even; integer arithmetic, since a
// float -> float16_t -> float round trip in registers may be folded away by a driver).
float round_act(float f) {
#if defined(ACT_IS_F16)
  return unpackHalf2x16(f16_from_f32(floatBitsToUint(f))).x;
#else
  return f;
#endif
}

#if defined(GLU_SILU)
float act(float g) { return silu(g); }
#elif defined(GLU_GELU)
float act(float g) { return gelu_tanh(g); }
#endif

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
    for (uint i = 0u; i < 8u; ++i) v[i] = (v[i] * r) * TO_F32(W_T, nw[k + i]);
#if defined(ACT_IS_F16)
    xs[g] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
                  packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
#else
    xs[2u * g] = floatBitsToUint(vec4(v[0], v[1], v[2], v[3]));
    xs[2u * g + 1u] = floatBitsToUint(vec4(v[4], v[5], v[6], v[7]));
#endif
  }
  barrier();
}

void main() {
  stage_rows();
  const uint n = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  if (n >= p.N) return;  // uniform over the subgroup, after the workgroup's barriers
  float acc[kMaxRows];
#if defined(GLU_SILU) || defined(GLU_GELU)
  float acc_up[kMaxRows];
#endif
  for (uint m = 0u; m < kMaxRows; ++m) {
    acc[m] = 0.0;
#if defined(GLU_SILU) || defined(GLU_GELU)
    acc_up[m] = 0.0;
#endif
  }
  for (uint k = gl_SubgroupInvocationID * 8u; k < p.K; k += gl_SubgroupSize * 8u) {
    vec4 wl, wh;
    LOAD_W(w1, n * p.w_sn + k, wl, wh);
#if defined(GLU_SILU) || defined(GLU_GELU)
    vec4 ul, uh;
    LOAD_W(w2, n * p.w_sn + k, ul, uh);
#endif
    for (uint m = 0u; m < p.M; ++m) {
      vec4 xl, xh;
      load_x(m * p.K + k, xl, xh);
      acc[m] += dot(xl, wl) + dot(xh, wh);
#if defined(GLU_SILU) || defined(GLU_GELU)
      acc_up[m] += dot(xl, ul) + dot(xh, uh);
#endif
    }
  }
  for (uint m = 0u; m < p.M; ++m) {
    float s = subgroupAdd(acc[m]);
#if defined(GLU_SILU) || defined(GLU_GELU)
    float u = subgroupAdd(acc_up[m]);
    if (subgroupElect()) y[m * p.y_sm + n] = FROM_F32(ACT_T, act(round_act(s)) * round_act(u));
#else
    if ((p.flags & 1u) != 0u) s += TO_F32(W_T, bias[n]);
    if (subgroupElect()) y[m * p.y_sm + n] = FROM_F32(ACT_T, s);
#endif
  }
}
