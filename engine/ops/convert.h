#pragma once
// Dtype conversion. x, y: the same shape, each f32, f16 or bf16 (the same dtype copies).
//   y = x, through f32, rounded to nearest even as torch's .to(dtype); f16 overflow gives inf,
//   subnormals are kept, NaN stays NaN. Bit-equal to ls::f32_to_f16 / f32_to_bf16 on every device.
// y must not overlap x unless the dtypes are equal.
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

void convert_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x);
// y [rows, n0 + n1 + n2] f16 or f32 = x0 [rows, n0], x1 [rows, n1] and x2 [rows, n2] f32 side by side, each
// element converted as convert_forward converts it (the gradients of q, k and v as the operand of their one dx product:
// model/layer.cpp). Each x may have any shape whose last dimension is its n and whose other ones make `rows`.
void concat_cols_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x0, const Tensor& x1, const Tensor& x2);

namespace ref {
// Raw element bits in and out: uint32 for f32, uint16 for f16/bf16 (widened to uint32 here).
std::vector<uint32_t> convert_forward(std::span<const uint32_t> x_bits, DType from, DType to);
}  // namespace ref

}  // namespace ls::ops
