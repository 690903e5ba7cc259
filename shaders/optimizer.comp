#version 450
#extension GL_GOOGLE_include_directive : require
// The optimizer step, all f32. One source, one kernel per define:
//   ADAMW          torch.optim.AdamW's update of one parameter tensor (arithmetic below)
//   SUMSQ_PARTIAL  sum of squares of up to 7 gradient tensors, one partial sum per workgroup
//   SUMSQ_FINAL    every partial summed into sumsq[0]
//   CLIP_SCALE     norm = sqrt(sumsq[0]); hyper[7] = torch.nn.utils.clip_grad_norm_'s factor, or -1 when the
//                  norm is not finite: ADAMW then leaves every tensor as it is (the step is skipped)
//   FILL_ZERO      t = 0, over 32-bit words (WORD16: 16-bit words, for tensors of an odd count of halves)
// Step-varying values come from `hyper` (written by the host before each run, hyper[7] by CLIP_SCALE):
//   {lr, beta1, beta2, eps, weight_decay, 1 - beta1^t, 1 - beta2^t, clip_scale}
// Sums are deterministic: every thread adds a fixed set of elements in a fixed order, and the workgroup
// reduction and the final sum read their partials in a fixed order (no atomics).
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

#if defined(ADAMW)
layout(binding = 0) buffer Param { float param[]; };
layout(binding = 1) readonly buffer Grad { float grad[]; };
layout(binding = 2) buffer M { float m[]; };
layout(binding = 3) buffer V { float v[]; };
layout(binding = 4) readonly buffer Hyper { float hyper[]; };
layout(push_constant) uniform Params { uint n; } p;

// torch/optim/adam.py, _single_tensor_adam (what AdamW(foreach=False, fused=False) runs when not
// capturable), operation by operation on f32 tensors with the Python scalars rounded to f32:
//   grad.mul_(clip_coef)                        (clip_grad_norm_, before the step)
//   param.mul_(1 - lr * weight_decay)
//   exp_avg.lerp_(grad, 1 - beta1)              lerp with weight w < 0.5: fma(w, g - m, m) (ATen's lerp_vec)
//   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)      v * b2 + ((1 - b2) * g) * g
//   denom = (exp_avg_sq.sqrt() / sqrt(bias_correction2)).add_(eps)
//   param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)      p + ((-step_size) * m) / denom
// The scalars are formed here in f32 (torch forms them in double, then rounds): 1 - beta2 for beta2 =
// 0.999 differs by 1.3e-5 relative, so v differs from torch's by that much and an update by < 7e-6 of
// its size (against torch 2.11 over 5 steps: params 4.5e-8 relative, exp_avg 2.8e-7, exp_avg_sq 1.3e-5).
// `precise` keeps the compiler from fusing what torch computes with two roundings.
void main() {
  const float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], weight_decay = hyper[4];
  const float clip_scale = hyper[7];
  if (clip_scale < 0.0) return;  // a NaN or infinite gradient: no update (CLIP_SCALE's marker)
  precise const float decay = 1.0 - lr * weight_decay;
  precise const float w1 = 1.0 - beta1;
  precise const float w2 = 1.0 - beta2;
  precise const float step_size = lr / hyper[5];
  precise const float bias_correction2_sqrt = sqrt(hyper[6]);
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    precise float g = grad[i] * clip_scale;
    precise float pi = param[i] * decay;
    precise float mi = m[i];
    mi = w1 < 0.5 ? fma(w1, g - mi, mi) : fma(w1 - 1.0, g - mi, g);
    precise float vi = v[i] * beta2 + (w2 * g) * g;
    precise float denom = sqrt(vi) / bias_correction2_sqrt + eps;
    pi = pi + ((-step_size) * mi) / denom;
    param[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

#elif defined(SUMSQ_PARTIAL)
layout(binding = 0) readonly buffer G0 { float g0[]; };
layout(binding = 1) readonly buffer G1 { float g1[]; };
layout(binding = 2) readonly buffer G2 { float g2[]; };
layout(binding = 3) readonly buffer G3 { float g3[]; };
layout(binding = 4) readonly buffer G4 { float g4[]; };
layout(binding = 5) readonly buffer G5 { float g5[]; };
layout(binding = 6) readonly buffer G6 { float g6[]; };
layout(binding = 7) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Params {
  uint count;           // tensors bound, 1..7 (bindings past count repeat binding 0 and are not read)
  uint slots;           // partials[] elements this dispatch owns; those past the last workgroup get 0
  uint n[7];            // elements of tensor k
  uint first_group[8];  // tensor k is summed by workgroups [first_group[k], first_group[k + 1])
} p;

float grad_at(uint k, uint i) {
  switch (k) {
    case 0u: return g0[i];
    case 1u: return g1[i];
    case 2u: return g2[i];
    case 3u: return g3[i];
    case 4u: return g4[i];
    case 5u: return g5[i];
    default: return g6[i];
  }
}

// Workgroup `part` of tensor k's `parts` sums elements part * W + tid + j * parts * W (W threads).
void main() {
  const uint group = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
  uint k = 0u;
  while (k + 1u < p.count && group >= p.first_group[k + 1u]) ++k;
  const uint part = group - p.first_group[k], parts = p.first_group[k + 1u] - p.first_group[k];
  const uint n = p.n[k];
  float sum = 0.0;
  for (uint i = part * threads + tid; i < n; i += parts * threads) {
    const float x = grad_at(k, i);
    sum += x * x;
  }
  sum = workgroup_sum(sum);
  if (tid == 0u) partials[group] = sum;
  if (group == 0u)
    for (uint s = p.first_group[p.count] + tid; s < p.slots; s += threads) partials[s] = 0.0;
}

#elif defined(SUMSQ_FINAL)
layout(binding = 0) readonly buffer Partials { float partials[]; };
layout(binding = 1) writeonly buffer Sumsq { float sumsq[]; };
layout(push_constant) uniform Params { uint count; } p;

void main() {
  float sum = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.count; i += gl_WorkGroupSize.x) sum += partials[i];
  sum = workgroup_sum(sum);
  if (gl_LocalInvocationID.x == 0u) sumsq[0] = sum;
}

#elif defined(CLIP_SCALE)
layout(binding = 0) readonly buffer Sumsq { float sumsq[]; };
layout(binding = 1) writeonly buffer Hyper { float hyper[]; };
layout(binding = 2) writeonly buffer Norm { float norm_out[]; };
layout(push_constant) uniform Params { float max_norm; } p;

// torch.nn.utils.clip_grad_norm_ in f32: clip_coef = max_norm / (total_norm + 1e-6), which Python
// evaluates as reciprocal(total_norm + 1e-6) * max_norm (Tensor.__rtruediv__), then clamp(max = 1).
// max_norm <= 0 turns clipping off (factor 1). A NaN or infinite norm (torch would scale by NaN or 0 and
// still step) writes the marker -1 instead, whatever max_norm: the update then skips every tensor and the
// host, reading norm_out, reports the step (train/trainer.cpp). The test is on the bits: no compiler may
// assume finite floats away.
void main() {
  if (gl_LocalInvocationID.x != 0u) return;
  precise const float norm = sqrt(sumsq[0]);
  precise float coef = (1.0 / (norm + 1e-6)) * p.max_norm;
  if (coef > 1.0 || !(p.max_norm > 0.0)) coef = 1.0;
  const bool finite = (floatBitsToUint(norm) & 0x7f800000u) != 0x7f800000u;
  hyper[7] = finite ? coef : -1.0;
  norm_out[0] = norm;
}

#elif defined(FILL_ZERO)
#ifdef WORD16
layout(binding = 0) writeonly buffer T { uint16_t t[]; };
#define ZERO uint16_t(0u)
#else
layout(binding = 0) writeonly buffer T { uint t[]; };
#define ZERO 0u
#endif
layout(push_constant) uniform Params { uint n; } p;  // words

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) t[i] = ZERO;
}
#endif
