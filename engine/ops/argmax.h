#pragma once
// Row argmax.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// idx [N] i32 = the index of the first maximum of each row of x [..., C] (f32, f16, bf16), as
// torch.argmax. NaN inputs are not special-cased. C <= 2^24.
void argmax_forward(vk::Recorder& rec, const Tensor& idx, const Tensor& x);

namespace ref {
void argmax_forward(std::span<int32_t> idx, std::span<const float> x, uint32_t cols);
}  // namespace ref

}  // namespace ls::ops
