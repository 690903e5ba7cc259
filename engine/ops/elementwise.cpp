#include "ops/elementwise.h"

#include <cmath>
#include <string>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct ElementwiseParams {  // = `Params` in shaders/elementwise.comp
  uint32_t n;
  float s;
};
static_assert(sizeof(ElementwiseParams) <= 128);

constexpr uint32_t kThreads = 256;
vk::Groups groups_for(uint64_t n) { return {std::min<uint32_t>(ceil_div(n, kThreads), 4096), 1, 1}; }
}  // namespace

void add_forward(vk::Recorder& rec, const Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "add_forward";
  require_dtype(a, {DType::f32, DType::f16, DType::bf16}, op, "a");
  require_shape(b, a.shape(), op, "b");
  require_shape(y, a.shape(), op, "y");
  require(b.dtype() == a.dtype() && y.dtype() == a.dtype(), op,
          "dtypes differ: y " + y.describe() + ", a " + a.describe() + ", b " + b.describe());
  rec.dispatch(variant(vk::family::add, {a.dtype()}, op), {in(a), in(b), out(y)},
               ElementwiseParams{.n = uint32_t(a.numel()), .s = 0}, groups_for(a.numel()), {.local_x = kThreads});
}

void scale_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float s) {
  const char* op = "scale_forward";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, "x");
  require_shape(y, x.shape(), op, "y");
  require(y.dtype() == x.dtype(), op, "dtypes differ: y " + y.describe() + ", x " + x.describe());
  rec.dispatch(variant(vk::family::scale, {x.dtype()}, op), {in(x), out(y)}, ElementwiseParams{.n = uint32_t(x.numel()), .s = s},
               groups_for(x.numel()), {.local_x = kThreads});
}

void softcap_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float c) {
  const char* op = "softcap_forward";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, "x");
  require_shape(y, x.shape(), op, "y");
  require(y.dtype() == x.dtype(), op, "dtypes differ: y " + y.describe() + ", x " + x.describe());
  require(c > 0 && std::isfinite(c), op, "the cap must be a positive number, got " + std::to_string(c));
  rec.dispatch(variant(vk::family::softcap, {x.dtype()}, op), {in(x), out(y)},
               ElementwiseParams{.n = uint32_t(x.numel()), .s = c}, groups_for(x.numel()), {.local_x = kThreads});
}

namespace ref {
void add_forward(std::span<float> y, std::span<const float> a, std::span<const float> b) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = a[i] + b[i];
}
void scale_forward(std::span<float> y, std::span<const float> x, float s) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = s * x[i];
}
void softcap_forward(std::span<float> y, std::span<const float> x, float c) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = float(double(c) * std::tanh(double(x[i]) / double(c)));
}
}  // namespace ref

}  // namespace ls::ops
