#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct SoftmaxParams {  // = Params in shaders/softmax.comp
  uint32_t rows;
  uint32_t cols;
  float scale;
  uint32_t seq;
  int32_t causal_offset;
};
static_assert(sizeof(SoftmaxParams) <= 128);

struct SoftmaxBackwardParams {  // = Params in shaders/softmax_backward.comp
  uint32_t rows;
  uint32_t cols;
  float scale;
};
static_assert(sizeof(SoftmaxBackwardParams) <= 128);


// Row-major [rows, cols] with 32-bit element indices in the kernels.
void require_rows(const Tensor& t, const char* op, const char* name) {
  require(t.rank() >= 1 && t.cols() > 0, op, std::string(name) + " is " + t.describe() + "; expected [..., C] with C > 0");
  require(t.numel() <= std::numeric_limits<uint32_t>::max(), op,
          std::string(name) + " is " + t.describe() + "; more than 2^32 - 1 elements");
}
}  // namespace

void softmax_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float scale, int32_t causal_offset) {
  const char* op = "softmax_forward";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, "x");
  require_rows(x, op, "x");
  require_shape(y, x.shape(), op, "y");
  require(y.dtype() == x.dtype(), op, "dtypes differ: y " + y.describe() + ", x " + x.describe());
  uint32_t seq = 1;
  if (causal_offset >= 0) {
    require(x.rank() >= 2, op, "causal mode needs x as [..., T, C]; x is " + x.describe());
    seq = x.dim(-2);
  }
  rec.dispatch(variant(vk::family::softmax, {x.dtype()}, op), {in(x), out(y)},
               SoftmaxParams{.rows = uint32_t(x.rows()), .cols = x.cols(), .scale = scale, .seq = seq,
                             .causal_offset = causal_offset},
               grid_stride_rows(x.rows()), {.local_x = row_threads_for(x.cols())});
}

void softmax_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& y, float scale) {
  const char* op = "softmax_backward";
  require_dtype(y, {DType::f32, DType::f16, DType::bf16}, op, "y");
  require_rows(y, op, "y");
  require_shape(dy, y.shape(), op, "dy");
  require_shape(dx, y.shape(), op, "dx");
  require(dy.dtype() == y.dtype() && dx.dtype() == y.dtype(), op,
          "dtypes differ: dx " + dx.describe() + ", dy " + dy.describe() + ", y " + y.describe());
  rec.dispatch(variant(vk::family::softmax_backward, {y.dtype()}, op), {in(dy), in(y), out(dx)},
               SoftmaxBackwardParams{.rows = uint32_t(y.rows()), .cols = y.cols(), .scale = scale},
               grid_stride_rows(y.rows()), {.local_x = row_threads_for(y.cols())});
}

namespace ref {
template <class F>
void softmax_forward(std::span<F> y, std::span<const F> x, uint32_t cols, double scale, uint32_t seq,
                     int32_t causal_offset) {
  size_t rows = x.size() / cols;
  for (size_t r = 0; r < rows; ++r) {
    size_t valid = cols;
    if (causal_offset >= 0) valid = std::min<size_t>(cols, r % seq + size_t(causal_offset) + 1);
    const F* xr = x.data() + r * cols;
    F* yr = y.data() + r * cols;
    double m = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < valid; ++c) m = std::max(m, scale * double(xr[c]));
    double sum = 0;
    for (size_t c = 0; c < valid; ++c) sum += std::exp(scale * double(xr[c]) - m);
    for (size_t c = 0; c < cols; ++c) yr[c] = c < valid ? F(std::exp(scale * double(xr[c]) - m) / sum) : F(0);
  }
}

template <class F>
void softmax_backward(std::span<F> dx, std::span<const F> dy, std::span<const F> y, uint32_t cols, double scale) {
  size_t rows = y.size() / cols;
  for (size_t r = 0; r < rows; ++r) {
    size_t b = r * cols;
    double dot = 0;
    for (size_t c = 0; c < cols; ++c) dot += double(dy[b + c]) * double(y[b + c]);
    for (size_t c = 0; c < cols; ++c) dx[b + c] = F(scale * double(y[b + c]) * (double(dy[b + c]) - dot));
  }
}

template void softmax_forward<float>(std::span<float>, std::span<const float>, uint32_t, double, uint32_t, int32_t);
template void softmax_forward<double>(std::span<double>, std::span<const double>, uint32_t, double, uint32_t, int32_t);
template void softmax_backward<float>(std::span<float>, std::span<const float>, std::span<const float>, uint32_t, double);
template void softmax_backward<double>(std::span<double>, std::span<const double>, std::span<const double>, uint32_t,
                                       double);
}  // namespace ref

}  // namespace ls::ops
