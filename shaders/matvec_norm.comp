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
// W_T: the storage type of the weights and the bias. x: [M, K] rows contiguous; M*K fits
// the staging (kStageWords); K, the weights' row stride and their bindings multiples of 8 elements.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/types.glsl"
#include "common/glu.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { vec4 x4[]; };
layout(binding = 1) readonly buffer NormW { uint nw_words[]; };  // of type p.nw_type
layout(binding = 2) readonly buffer W1 { uvec4 w1[]; };
layout(binding = 3) readonly buffer W2 { uvec4 w2[]; };  // up (GLU); bound to W1 otherwise, unread
layout(binding = 4) readonly buffer Bias { STORE(W_T) bias[]; };
layout(binding = 5) writeonly buffer Y { STORE(ACT_T) y[]; };
layout(push_constant) uniform Params {
  uint M, N, K;
  uint w_sn;   // the weights' row stride (elements)
  uint y_sm;   // y's row stride
  float eps;
  uint flags;    // 1: bias
  uint nw_type;  // the norm weight's storage type: 0 f32, 1 f16, 2 bf16 (it may differ from W_T: bf16 norms
                 // beside weights converted to f16 for the tensor cores, or Gemma's f32 1 + w)
} p;

#define ROWS_ID 3
#include "common/matvec_norm_stage.glsl"

#if defined(GLU_SILU)
float act(float g) { return silu(g); }
#elif defined(GLU_GELU)
float act(float g) { return gelu_tanh(g); }
#endif

void main() {
  stage_rows();
  const uint n = gl_WorkGroupID.x * split_columns() + gl_SubgroupID / kSplit;
  const bool live = n < p.N;  // uniform over the subgroup
  // float accumulators, not vec2: the GLU product at 7B took 99 us with vec2 against 91 (session 20, calls 2 and 4)
  float acc[kMaxRows], acc_up[kMaxRows];
  for (uint m = 0u; m < kMaxRows; ++m) acc[m] = acc_up[m] = 0.0;
  if (live) {
    // kDepth pieces of each row a lane loads before it sums any (the same sums in the same order)
    const uint step = split_k_step();
    for (uint k0 = split_k0(); k0 < p.K; k0 += step * kDepth) {
      RawW w[kMaxDepth], wu[kMaxDepth];
      [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
        if (u < kDepth && k0 + u * step < p.K) {
          LOAD_RAW(w1, n * p.w_sn + k0 + u * step, w[u]);
#if defined(GLU_SILU) || defined(GLU_GELU)
          LOAD_RAW(w2, n * p.w_sn + k0 + u * step, wu[u]);
#endif
        }
      }
      [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
        const uint k = k0 + u * step;
        if (u >= kDepth || k >= p.K) break;
        vec4 wl, wh;
        unpack_w(w[u], wl, wh);
#if defined(GLU_SILU) || defined(GLU_GELU)
        vec4 ul, uh;
        unpack_w(wu[u], ul, uh);
#endif
        [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
          if (m >= p.M) break;
          vec4 xl, xh;
          load_x(m * p.K + k, xl, xh);
          acc[m] += dot(xl, wl) + dot(xh, wh);
#if defined(GLU_SILU) || defined(GLU_GELU)
          acc_up[m] += dot(xl, ul) + dot(xh, uh);
#endif
        }
      }
    }
  }
  vec2 sums[kMaxRows];  // (x̂·W(n), and GLU: x̂·Wu(n))
  for (uint m = 0u; m < kMaxRows; ++m) sums[m] = vec2(acc[m], acc_up[m]);
  if (!column_sums(sums, live)) return;
  [[unroll]] for (uint m = 0u; m < kMaxRows; ++m) {  // constant indices keep acc in registers
    if (m >= p.M) break;
#if defined(GLU_SILU) || defined(GLU_GELU)
    y[m * p.y_sm + n] = FROM_F32(ACT_T, act(round_act(sums[m].x)) * round_act(sums[m].y));
#else
    float s = sums[m].x;
    if ((p.flags & 1u) != 0u) s += TO_F32(W_T, bias[n]);
    y[m * p.y_sm + n] = FROM_F32(ACT_T, s);
#endif
  }
}
