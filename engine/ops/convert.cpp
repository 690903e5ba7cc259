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

void concat_cols_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x0, const Tensor& x1, const Tensor& x2) {
  const char* op = "concat_cols_forward";
  require_dtype(y, {DType::f16, DType::f32}, op, "y");
  require(y.rank() == 2, op, "y is " + y.describe() + "; expected a matrix");
  const uint32_t rows = y.dim(0);
  struct Part {
    const Tensor& x;
    const char* name;
  };
  uint32_t cols = 0;
  for (const Part& part : {Part{x0, "x0"}, Part{x1, "x1"}, Part{x2, "x2"}}) {
    require_dtype(part.x, {DType::f32}, op, part.name);
    require(part.x.cols() > 0 && part.x.numel() == uint64_t(rows) * part.x.cols(), op,
            std::string(part.name) + " is " + part.x.describe() + "; expected " + std::to_string(rows) + " rows");
    cols += part.x.cols();
  }
  require(y.cols() == cols, op, "y is " + y.describe() + "; expected " + std::to_string(cols) + " columns");
  struct ConcatParams {  // = `Params` in shaders/convert.comp with CONCAT3
    uint32_t rows, n0, n1, n2;
  };
  const vk::Kernel kernel = y.dtype() == DType::f16 ? vk::Kernel::concat3_f32_to_f16 : vk::Kernel::concat3_f32_to_f32;
  rec.dispatch(kernel, {in(x0), in(x1), in(x2), out(y)},
               ConcatParams{rows, x0.cols(), x1.cols(), x2.cols()},
               {std::min<uint32_t>(ceil_div(y.numel(), kThreads), 4096), 1, 1}, {.local_x = kThreads});
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
