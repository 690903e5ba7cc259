#include "ops/rope.h"

#include <cmath>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct RopeParams {  // = `Params` in shaders/rope.comp
  uint32_t pairs;
  uint32_t half_d;
  uint32_t heads;
};
static_assert(sizeof(RopeParams) <= 128);

constexpr uint32_t kThreads = 256;

void rope(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& inv_freq,
          bool backward) {
  const char* op = backward ? "rope_backward" : "rope_forward";
  const char* x_name = backward ? "dy" : "x";
  const char* y_name = backward ? "dx" : "y";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, x_name);
  require(x.rank() >= 2, op, std::string(x_name) + " is " + x.describe() + "; expected [..., H, D]");
  const uint32_t heads = x.dim(-2), head_dim = x.dim(-1);
  require(head_dim % 2 == 0 && head_dim > 0 && heads > 0, op,
          std::string(x_name) + " is " + x.describe() + "; expected [..., H, D] with D even and H, D > 0");
  require_shape(y, x.shape(), op, y_name);
  require(y.dtype() == x.dtype(), op,
          std::string("dtypes differ: ") + y_name + " " + y.describe() + ", " + x_name + " " + x.describe());
  require_dtype(positions, {DType::i32}, op, "positions");
  require_numel(positions, x.numel() / (uint64_t(heads) * head_dim), op, "positions");
  require_dtype(inv_freq, {DType::f32}, op, "inv_freq");
  require_numel(inv_freq, head_dim / 2, op, "inv_freq");

  const uint64_t pairs = x.numel() / 2;
  rec.dispatch(variant(backward ? vk::family::rope_backward : vk::family::rope_forward, {x.dtype()}, op),
               {in(x), in(positions), in(inv_freq), out(y)},
               RopeParams{.pairs = uint32_t(pairs), .half_d = head_dim / 2, .heads = heads},
               {std::min<uint32_t>(ceil_div(pairs, kThreads), 4096), 1, 1}, {.local_x = kThreads});
}
}  // namespace

Tensor rope_inv_freq_tensor(vk::Device& device, std::span<const float> inv_freq) {
  Tensor t = Tensor::empty(device, {uint32_t(inv_freq.size())}, DType::f32, "rope inv_freq");
  upload(t, inv_freq);
  return t;
}

namespace {
Tensor inv_freq_for(vk::Recorder& rec, const Tensor& x, float theta, const char* op) {
  require(theta > 0, op, "theta must be positive, got " + std::to_string(theta));
  require(x.rank() >= 1 && x.dim(-1) % 2 == 0, op, "x is " + x.describe() + "; expected [..., H, D] with D even");
  return rope_inv_freq_tensor(rec.device(), rope_inv_freq(x.dim(-1), theta));
}
}  // namespace

void rope_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& positions, float theta) {
  rope(rec, y, x, positions, inv_freq_for(rec, x, theta, "rope_forward"), false);
}

void rope_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& positions, float theta) {
  rope(rec, dx, dy, positions, inv_freq_for(rec, dy, theta, "rope_backward"), true);
}

void rope_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& inv_freq) {
  rope(rec, y, x, positions, inv_freq, false);
}

void rope_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& positions,
                   const Tensor& inv_freq) {
  rope(rec, dx, dy, positions, inv_freq, true);
}

std::vector<float> rope_inv_freq(uint32_t head_dim, float theta) {
  // HF: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all in f32.
  std::vector<float> inv_freq(head_dim / 2);
  for (uint32_t i = 0; i < head_dim / 2; ++i) {
    float exponent = float(2 * i) / float(head_dim);
    float power = float(std::pow(double(theta), double(exponent)));
    inv_freq[i] = 1.0f / power;
  }
  return inv_freq;
}

namespace ref {
namespace {
// sign +1: forward rotation by a; -1: its transpose.
template <class F>
void rotate(std::span<F> y, std::span<const F> x, std::span<const int32_t> positions, uint32_t head_dim, float theta,
            float sign) {
  const auto inv_freq = rope_inv_freq(head_dim, theta);
  const size_t half = head_dim / 2, rows = x.size() / head_dim, heads = rows / positions.size();
  for (size_t row = 0; row < rows; ++row) {
    for (size_t i = 0; i < half; ++i) {
      float a = float(positions[row / heads]) * inv_freq[i];  // f32 as in HF
      F c = F(float(std::cos(double(a)))), s = F(sign * float(std::sin(double(a))));
      F x0 = x[row * head_dim + i], x1 = x[row * head_dim + i + half];
      y[row * head_dim + i] = x0 * c - x1 * s;
      y[row * head_dim + i + half] = x1 * c + x0 * s;
    }
  }
}
}  // namespace

void rope_forward(std::span<float> y, std::span<const float> x, std::span<const int32_t> positions, uint32_t head_dim,
                  float theta) {
  rotate(y, x, positions, head_dim, theta, 1.0f);
}
void rope_forward(std::span<double> y, std::span<const double> x, std::span<const int32_t> positions, uint32_t head_dim,
                  float theta) {
  rotate(y, x, positions, head_dim, theta, 1.0f);
}
void rope_backward(std::span<float> dx, std::span<const float> dy, std::span<const int32_t> positions,
                   uint32_t head_dim, float theta) {
  rotate(dx, dy, positions, head_dim, theta, -1.0f);
}
void rope_backward(std::span<double> dx, std::span<const double> dy, std::span<const int32_t> positions,
                   uint32_t head_dim, float theta) {
  rotate(dx, dy, positions, head_dim, theta, -1.0f);
}
}  // namespace ref

}  // namespace ls::ops
