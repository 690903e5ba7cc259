#include "ops/activations.h"

#include <cmath>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct SiluMulParams {  // = `Params` in shaders/{silu,gelu_tanh}_mul{,_backward}.comp
  uint32_t n;
};
static_assert(sizeof(SiluMulParams) <= 128);

constexpr uint32_t kThreads = 256;
// Threads for n elements, grid-stride beyond 4096 workgroups; the f16-in, f16-out rows take eight elements a
// thread (shaders/common/f16x8.glsl).
vk::Groups groups_for(const Tensor& gate, const Tensor& out) {
  const uint64_t n = gate.numel(), per_thread = gate.dtype() == DType::f16 && out.dtype() == DType::f16 ? 8 : 1;
  return {uint32_t(std::min<uint64_t>(ceil_div(ceil_div(n, per_thread), kThreads), 4096)), 1, 1};
}

// Every tensor has `like`'s shape and dtype.
void require_like(const Tensor& t, const Tensor& like, const char* op, const char* name, const char* like_name) {
  require_shape(t, like.shape(), op, name);
  require(t.dtype() == like.dtype(), op,
          std::string("dtypes differ: ") + name + " " + t.describe() + ", " + like_name + " " + like.describe());
}

// An output has the inputs' shape and their dtype, or f16 from f32 inputs (an operand of tensor-core products).
void require_output(const Tensor& t, const Tensor& gate, const char* op, const char* name) {
  require_shape(t, gate.shape(), op, name);
  require(t.dtype() == gate.dtype() || (gate.dtype() == DType::f32 && t.dtype() == DType::f16), op,
          std::string(name) + " is " + t.describe() + " for inputs " + gate.describe() +
              ": expected their dtype, or f16 from f32");
}
}  // namespace

void silu_mul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& gate, const Tensor& up) {
  const char* op = "silu_mul_forward";
  require_dtype(gate, {DType::f32, DType::f16, DType::bf16}, op, "gate");
  require_like(up, gate, op, "up", "gate");
  require_output(y, gate, op, "y");
  rec.dispatch(variant(vk::family::silu_mul, {gate.dtype(), y.dtype()}, op), {in(gate), in(up), out(y)},
               SiluMulParams{.n = uint32_t(gate.numel())}, groups_for(gate, y), {.local_x = kThreads});
}

void silu_mul_backward(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy, const Tensor& gate,
                       const Tensor& up) {
  const char* op = "silu_mul_backward";
  require_dtype(gate, {DType::f32, DType::f16, DType::bf16}, op, "gate");
  require_like(up, gate, op, "up", "gate");
  require_like(dy, gate, op, "dy", "gate");
  require_output(dgate, gate, op, "dgate");
  require_like(dup, dgate, op, "dup", "dgate");
  rec.dispatch(variant(vk::family::silu_mul_backward, {gate.dtype(), dgate.dtype()}, op), {in(dy), in(gate), in(up), out(dgate), out(dup)},
               SiluMulParams{.n = uint32_t(gate.numel())}, groups_for(gate, dgate), {.local_x = kThreads});
}

void gelu_tanh_mul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& gate, const Tensor& up) {
  const char* op = "gelu_tanh_mul_forward";
  require_dtype(gate, {DType::f32, DType::f16, DType::bf16}, op, "gate");
  require_like(up, gate, op, "up", "gate");
  require_output(y, gate, op, "y");
  rec.dispatch(variant(vk::family::gelu_tanh_mul, {gate.dtype(), y.dtype()}, op), {in(gate), in(up), out(y)},
               SiluMulParams{.n = uint32_t(gate.numel())}, groups_for(gate, y), {.local_x = kThreads});
}

void gelu_tanh_mul_backward(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy,
                            const Tensor& gate, const Tensor& up) {
  const char* op = "gelu_tanh_mul_backward";
  require_dtype(gate, {DType::f32, DType::f16, DType::bf16}, op, "gate");
  require_like(up, gate, op, "up", "gate");
  require_like(dy, gate, op, "dy", "gate");
  require_output(dgate, gate, op, "dgate");
  require_like(dup, dgate, op, "dup", "dgate");
  rec.dispatch(variant(vk::family::gelu_tanh_mul_backward, {gate.dtype(), dgate.dtype()}, op),
               {in(dy), in(gate), in(up), out(dgate), out(dup)}, SiluMulParams{.n = uint32_t(gate.numel())},
               groups_for(gate, dgate), {.local_x = kThreads});
}

namespace ref {
namespace {
template <class F>
F sigmoid(F g) {
  return F(1) / (F(1) + std::exp(-g));
}

template <class F>
void forward(std::span<F> y, std::span<const F> gate, std::span<const F> up) {
  for (size_t i = 0; i < y.size(); ++i) y[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

template <class F>
void backward(std::span<F> dgate, std::span<F> dup, std::span<const F> dy, std::span<const F> gate,
              std::span<const F> up) {
  for (size_t i = 0; i < dy.size(); ++i) {
    F g = gate[i], u = up[i], d = dy[i], s = sigmoid(g);
    dgate[i] = d * u * s * (F(1) + g * (F(1) - s));
    dup[i] = d * g * s;
  }
}
constexpr double kBeta = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kKappa = 0.044715;

template <class F>
void gelu_forward(std::span<F> y, std::span<const F> gate, std::span<const F> up) {
  for (size_t i = 0; i < y.size(); ++i) {
    const F g = gate[i], t = std::tanh(F(kBeta) * (g + F(kKappa) * g * g * g));
    y[i] = F(0.5) * g * (F(1) + t) * up[i];
  }
}

template <class F>
void gelu_backward(std::span<F> dgate, std::span<F> dup, std::span<const F> dy, std::span<const F> gate,
                   std::span<const F> up) {
  for (size_t i = 0; i < dy.size(); ++i) {
    const F g = gate[i], u = up[i], d = dy[i], t = std::tanh(F(kBeta) * (g + F(kKappa) * g * g * g));
    const F dgelu = F(0.5) * (F(1) + t) + F(0.5) * g * (F(1) - t * t) * F(kBeta) * (F(1) + F(3 * kKappa) * g * g);
    dgate[i] = d * u * dgelu;
    dup[i] = d * F(0.5) * g * (F(1) + t);
  }
}
}  // namespace

void silu_mul_forward(std::span<float> y, std::span<const float> gate, std::span<const float> up) {
  forward(y, gate, up);
}
void gelu_tanh_mul_forward(std::span<float> y, std::span<const float> gate, std::span<const float> up) {
  gelu_forward(y, gate, up);
}
void gelu_tanh_mul_forward(std::span<double> y, std::span<const double> gate, std::span<const double> up) {
  gelu_forward(y, gate, up);
}
void gelu_tanh_mul_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dy,
                            std::span<const float> gate, std::span<const float> up) {
  gelu_backward(dgate, dup, dy, gate, up);
}
void gelu_tanh_mul_backward(std::span<double> dgate, std::span<double> dup, std::span<const double> dy,
                            std::span<const double> gate, std::span<const double> up) {
  gelu_backward(dgate, dup, dy, gate, up);
}
void silu_mul_forward(std::span<double> y, std::span<const double> gate, std::span<const double> up) {
  forward(y, gate, up);
}
void silu_mul_backward(std::span<float> dgate, std::span<float> dup, std::span<const float> dy,
                       std::span<const float> gate, std::span<const float> up) {
  backward(dgate, dup, dy, gate, up);
}
void silu_mul_backward(std::span<double> dgate, std::span<double> dup, std::span<const double> dy,
                       std::span<const double> gate, std::span<const double> up) {
  backward(dgate, dup, dy, gate, up);
}
}  // namespace ref

}  // namespace ls::ops
