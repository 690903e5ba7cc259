#pragma once
// Decoding's norm-fused products (shaders/matvec_norm.comp): RMSNorm of the f32 residual stream folded into
// the few-row products that read it, so that a decoded token's layer runs the input norm with q, k and v,
// and the post-attention norm with gate, up and their activation, each in one dispatch:
//   x̂ = round_act((x * rstd) * w_norm),  rstd = 1 / sqrt(mean(x^2) + eps)      (ops::rms_norm_forward's h)
//   norm_matvec_forward:  y = x̂·Wᵀ (+ bias)                                      (ops::matmul_forward's y)
//   norm_glu_matvec_forward: y = act(round_act(x̂·Wgᵀ)) · round_act(x̂·Wuᵀ)   (gate and up stored, then
//                                                                           ops::silu_mul_forward)
// round_act rounds to y's dtype (the activation type: f32, or f16 to nearest even). x: [M, K] f32 with
// M <= 4 rows (norm_matvec_fits); W, Wg, Wu: [N, K] of one dtype (f32, f16 or bf16), which the norm's weight
// [K] and the bias [N] share; y: [M, N] f32 or f16. The results equal the unfused ops' up to the order of
// the f32 sums.
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

enum class GluActivation { silu, gelu_tanh };

// Whether the fused kernels take these operands (every weight given; undefined ones are skipped): few
// rows, sizes and strides the 16-byte loads and the staging allow, one weight dtype. The callers fall back
// to the norm and the products apart when not.
bool norm_matvec_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w, std::initializer_list<Tensor> weights);

void norm_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                         const Tensor& w, const Tensor& bias);
void norm_glu_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                             const Tensor& w_gate, const Tensor& w_up, GluActivation activation);

namespace ref {
// Row-major as above (bias empty: none; y_f16: round x̂ and the gate and up products to f16). Sums in double.
void norm_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                         std::span<const float> w, std::span<const float> bias, bool y_f16);
void norm_glu_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                             std::span<const float> w_gate, std::span<const float> w_up, GluActivation activation,
                             bool y_f16);
}  // namespace ref

}  // namespace ls::ops
