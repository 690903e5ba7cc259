#pragma once
// Elementwise ops over tensors of any shape (same shape and dtype throughout): f32, f16, bf16.
#include <span>
#include <vector>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// y = a + b (the residual add). y may alias a or b.
void add_forward(vk::Recorder& rec, const Tensor& y, const Tensor& a, const Tensor& b);
// y = s * x. y may alias x. Its backward is scale_forward(dx, dy, s).
void scale_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float s);
// y = c·tanh(x / c), c > 0 (Gemma 3's final logit softcapping, transformers' order: divide, tanh, multiply).
// y may alias x. Its backward, dx = dy·(1 - (y / c)²), is fused into ops::cross_entropy_backward's softcap.
void softcap_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float c);

namespace ref {
void add_forward(std::span<float> y, std::span<const float> a, std::span<const float> b);
void scale_forward(std::span<float> y, std::span<const float> x, float s);
void softcap_forward(std::span<float> y, std::span<const float> x, float c);  // tanh in double
}  // namespace ref

}  // namespace ls::ops
