#include "ops/convert.h"

#include <bit>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct ConvertParams {  // = `Params` in shaders/convert.comp
  uint32_t n;
};
static_assert(sizeof(ConvertParams) <= 128);

constexpr uint32_t kThreads = 256;
}  // namespace

void convert_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x) {
  const char* op = "convert_forward";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, "x");
  require_dtype(y, {DType::f32, DType::f16, DType::bf16}, op, "y");
  require_shape(y, x.shape(), op, "y");
  using K = vk::Kernel;
  static constexpr K kernels[3][3] = {{K::convert_f32_to_f32, K::convert_f32_to_f16, K::convert_f32_to_bf16},
                                      {K::convert_f16_to_f32, K::convert_f16_to_f16, K::convert_f16_to_bf16},
                                      {K::convert_bf16_to_f32, K::convert_bf16_to_f16, K::convert_bf16_to_bf16}};
  rec.dispatch(kernels[float_index(x.dtype())][float_index(y.dtype())], {in(x), out(y)},
               ConvertParams{.n = uint32_t(x.numel())}, {std::min<uint32_t>(ceil_div(x.numel(), kThreads), 4096), 1, 1},
               {.local_x = kThreads});
}

namespace ref {
std::vector<uint32_t> convert_forward(std::span<const uint32_t> x_bits, DType from, DType to) {
  std::vector<uint32_t> y(x_bits.size());
  for (size_t i = 0; i < x_bits.size(); ++i) {
    if (from == to) {
      y[i] = x_bits[i];
      continue;
    }
    const uint16_t half = uint16_t(x_bits[i]);
    const float f = from == DType::f32   ? std::bit_cast<float>(x_bits[i])
                    : from == DType::f16 ? f16_to_f32(half)
                                         : bf16_to_f32(half);
    y[i] = to == DType::f32 ? std::bit_cast<uint32_t>(f) : to == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f);
  }
  return y;
}
}  // namespace ref

}  // namespace ls::ops
