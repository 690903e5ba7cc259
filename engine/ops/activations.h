#pragma once
// Gated MLPs' elementwise part: SwiGLU (the MLP of Qwen2/Llama: down(silu(gate(x)) * up(x))) and GeGLU
// with the tanh GELU (Gemma: down(gelu_tanh(gate(x)) * up(x))). gate, up, y: any shape, all the same, one
// dtype: f32, f16 or bf16 (computed in f32); or f32 inputs and f16 outputs, rounded to nearest even as
// ops/convert rounds (the operands of tensor-core products: model/layer_acts.h F16Operands). Aliasing
// needs one dtype.
//   y = silu(gate) * up,  silu(g) = g * sigmoid(g) = g / (1 + exp(-g))
//   y = gelu_tanh(gate) * up,  gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g³)))  (transformers'
//   gelu_pytorch_tanh, torch's gelu(approximate="tanh"))
// sigmoid and tanh are evaluated so that no |g| overflows (|g| = 30, 100, 1e30 give no NaN).
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// y = silu(gate) * up. y may alias gate or up.
void silu_mul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& gate, const Tensor& up);
// dup = dy * silu(g);  dgate = dy * up * s * (1 + g * (1 - s)), s = sigmoid(g). All tensors one shape
// and dtype. dgate may alias gate and dup may alias up (dy is read first too).
void silu_mul_backward(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy, const Tensor& gate,
                       const Tensor& up);

// y = gelu_tanh(gate) * up. y may alias gate or up.
void gelu_tanh_mul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& gate, const Tensor& up);
// With t = tanh(sqrt(2/pi) (g + 0.044715 g³)): dup = dy * 0.5 g (1 + t);
// dgate = dy * up * (0.5 (1 + t) + 0.5 g (1 - t²) sqrt(2/pi) (1 + 3·0.044715 g²)). Aliasing as silu_mul_backward.
void gelu_tanh_mul_backward(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy,
                            const Tensor& gate, const Tensor& up);

namespace ref {
void silu_mul_forward(std::span<float> y, std::span<const float> gate, std::span<const float> up);
void silu_mul_forward(std::span<double> y, std::span<const double> gate, std::span<const double> up);
void silu_mul_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dy,
                       std::span<const float> gate, std::span<const float> up);
void silu_mul_backward(std::span<double> dgate, std::span<double> dup, std::span<const double> dy,
                       std::span<const double> gate, std::span<const double> up);
void gelu_tanh_mul_forward(std::span<float> y, std::span<const float> gate, std::span<const float> up);
void gelu_tanh_mul_forward(std::span<double> y, std::span<const double> gate, std::span<const double> up);
void gelu_tanh_mul_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dy,
                            std::span<const float> gate, std::span<const float> up);
void gelu_tanh_mul_backward(std::span<double> dgate, std::span<double> dup, std::span<const double> dy,
                            std::span<const double> gate, std::span<const double> up);
}  // namespace ref

}  // namespace ls::ops
