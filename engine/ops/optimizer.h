#pragma once
// The optimizer step over f32 tensors (the LoRA master weights, their gradients and Adam moments).
// Step-varying values live on the device, because programs are recorded once and replayed (docs/design.md):
//   hyper [8] f32 = {lr, beta1, beta2, eps, weight_decay, bias_correction1 = 1 - beta1^t,
//                    bias_correction2 = 1 - beta2^t, clip_scale}
// written by the host before each run (train::hyper_values), except hyper[7], which clip_scale() writes
// on the device from the gradient norm. A step is: grad_sumsq -> clip_scale -> adamw_step per tensor.
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

constexpr uint32_t kHyperSlots = 8;

// torch.optim.AdamW (decoupled weight decay) on one parameter tensor, per element, in exactly the order
// of torch/optim/adam.py _single_tensor_adam (AdamW with foreach=False, fused=False, capturable=False),
// preceded by clip_grad_norm_'s scaling of the gradient:
//   g = grad * clip_scale;  p *= 1 - lr * weight_decay;  m = lerp(m, g, 1 - beta1) = m + (1 - beta1) (g - m);
//   v = v * beta2 + ((1 - beta2) g) g;  p += (-(lr / bc1) m) / (sqrt(v) / sqrt(bc2) + eps)
// param, grad, m, v: the same shape, f32, updated in place (grad is only read: torch clips it in place,
// we fold the factor in). hyper: [8] f32 as above. The scalars are formed in f32 on the device (torch
// forms them in double); see shaders/optimizer.comp for what that changes.
void adamw_step(vk::Recorder& rec, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                const Tensor& hyper);

// sumsq [1] f32 = sum over every element of every gradient tensor (f32, any shapes) of g^2.
// Deterministic (the same order on every run, no atomics): up to 7 tensors per dispatch, each split into
// at most 1024 workgroups that each write one partial sum into a scratch buffer, then one workgroup sums
// the partials in order. ceil(count / 7) + 1 dispatches, one barrier before the final sum.
void grad_sumsq(vk::Recorder& rec, const Tensor& sumsq, std::span<const Tensor> grads);

// norm_out [1] f32 = sqrt(sumsq[0]); hyper[7] = min((1 / (norm + 1e-6)) * max_norm, 1) when max_norm > 0,
// else 1: torch.nn.utils.clip_grad_norm_'s factor (clip_coef clamped to 1, computed as torch evaluates
// `max_norm / (total_norm + 1e-6)` on a tensor). A NaN or infinite norm writes -1 instead, and adamw_step
// then changes nothing: a non-finite gradient never reaches the weights or the moments. The other slots of
// hyper are left as they are.
void clip_scale(vk::Recorder& rec, const Tensor& hyper, const Tensor& norm_out, const Tensor& sumsq, float max_norm);

// t = 0 (gradient accumulators), any dtype.
void fill_zero(vk::Recorder& rec, const Tensor& t);

// CPU references: the kernels' arithmetic step by step in f32 (adamw_step, clip_scale) and the exact
// sum in double (grad_sumsq).
namespace ref {
void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v,
                std::span<const float> hyper);
double grad_sumsq(std::span<const std::span<const float>> grads);
// Writes hyper[7] and returns the norm.
float clip_scale(std::span<float> hyper, float sumsq, float max_norm);
}  // namespace ref

}  // namespace ls::ops
