#pragma once
// Row softmax and its backward, over the last dimension: x, y, dy, dx are [..., C] (rows = the product
// of the other dimensions), f32, f16 or bf16 (all the same dtype; compute in f32).
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// y = softmax(scale * x) per row. y may alias x.
// Causal mode (causal_offset >= 0), as attention scores with a KV cache: x is [..., T, C] with
// T = x.dim(-2), row r is query t = r % T, and columns c > t + causal_offset are masked (probability
// exactly 0, y written as 0). causal_offset is the number of cached keys before this block of queries.
void softmax_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float scale = 1.0f,
                     int32_t causal_offset = -1);

// dx = scale * y * (dy - sum_c dy * y) per row, for y = softmax(scale * x) (masked entries have y = 0,
// so dx = 0 there). dx may alias dy or y.
void softmax_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& y, float scale = 1.0f);

// CPU references (accumulate in double); F is float or double. x, y, dy, dx are [rows, cols] row-major;
// `seq` is T of the causal mask (used only when causal_offset >= 0).
namespace ref {
template <class F>
void softmax_forward(std::span<F> y, std::span<const F> x, uint32_t cols, double scale = 1.0, uint32_t seq = 1,
                     int32_t causal_offset = -1);
template <class F>
void softmax_backward(std::span<F> dx, std::span<const F> dy, std::span<const F> y, uint32_t cols, double scale = 1.0);
}  // namespace ref

}  // namespace ls::ops
