#include "ops/dropout.h"

#include <cmath>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct DropoutParams {  // = `Params` in shaders/dropout.comp
  uint32_t n;
  uint32_t stream;
  uint32_t threshold;  // ref::dropout_threshold(p)
  float scale;         // 1 / (1 - p)
  uint32_t accumulate;
};
static_assert(sizeof(DropoutParams) <= 128);

constexpr uint32_t kThreads = 256;                     // each thread: 4 elements (one Philox call) at a time
constexpr uint64_t kMaxElements = 0xFFFFFFFFull - 3;   // the kernels count elements in u32

float scale_of(float p) { return 1.0f / (1.0f - p); }

void check(const char* op, const Tensor& y, const Tensor& x, float p, const Tensor& seed, const char* y_name,
           const char* x_name) {
  require(p >= 0.0f && p < 1.0f, op, "p = " + std::to_string(p) + " is not in [0, 1)");
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, x_name);
  require_shape(y, x.shape(), op, y_name);
  require(y.dtype() == x.dtype(), op,
          std::string("dtypes differ: ") + y_name + " " + y.describe() + ", " + x_name + " " + x.describe());
  require(x.numel() > 0 && x.numel() <= kMaxElements, op, std::string(x_name) + " " + x.describe() +
          " has no elements or more than 2^32 - 4");
  require_dtype(seed, {DType::i32}, op, "seed");
  require_numel(seed, 2, op, "seed");
}

vk::Groups groups_for(uint64_t n) { return {std::min<uint32_t>(ceil_div(ceil_div(n, 4), kThreads), 4096), 1, 1}; }
}  // namespace

void dropout_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float p, const Tensor& seed,
                     uint32_t stream) {
  check("dropout_forward", y, x, p, seed, "y", "x");
  rec.dispatch(variant(vk::family::dropout_forward, {x.dtype()}, "dropout_forward"), {in(x), out(y), in(seed)},
               DropoutParams{.n = uint32_t(x.numel()),
                             .stream = stream,
                             .threshold = ref::dropout_threshold(p),
                             .scale = scale_of(p),
                             .accumulate = 0},
               groups_for(x.numel()), {.local_x = kThreads});
}

void dropout_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, float p, const Tensor& seed,
                      uint32_t stream, bool accumulate) {
  check("dropout_backward", dx, dy, p, seed, "dx", "dy");
  rec.dispatch(variant(vk::family::dropout_backward, {dy.dtype()}, "dropout_backward"), {in(dy), accumulate ? inout(dx) : out(dx), in(seed)},
               DropoutParams{.n = uint32_t(dy.numel()),
                             .stream = stream,
                             .threshold = ref::dropout_threshold(p),
                             .scale = scale_of(p),
                             .accumulate = accumulate ? 1u : 0u},
               groups_for(dy.numel()), {.local_x = kThreads});
}

namespace ref {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}

uint32_t dropout_threshold(float p) { return uint32_t(std::ceil(double(p) * 4294967296.0)); }  // exact: p has 24 bits

bool dropout_keep(std::array<uint32_t, 2> seed, uint32_t stream, uint64_t i, float p) {
  const uint64_t q = i / 4;
  const auto r = philox4x32_10({uint32_t(q), uint32_t(q >> 32), stream, 0}, seed);
  return r[i % 4] >= dropout_threshold(p);
}

void dropout_forward(std::span<float> y, std::span<const float> x, float p, std::array<uint32_t, 2> seed,
                     uint32_t stream) {
  const float scale = scale_of(p);
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * (dropout_keep(seed, stream, i, p) ? scale : 0.0f);
}

void dropout_backward(std::span<float> dx, std::span<const float> dy, float p, std::array<uint32_t, 2> seed,
                      uint32_t stream, bool accumulate) {
  const float scale = scale_of(p);
  for (size_t i = 0; i < dy.size(); ++i) {
    const float v = dy[i] * (dropout_keep(seed, stream, i, p) ? scale : 0.0f);
    dx[i] = accumulate ? dx[i] + v : v;
  }
}

}  // namespace ref

}  // namespace ls::ops
