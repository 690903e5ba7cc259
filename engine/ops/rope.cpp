#include "ops/rope.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct RopeParams {  // = `Params` in shaders/rope.comp
  uint32_t pairs;
  uint32_t half_d;
  uint32_t heads;
};
static_assert(sizeof(RopeParams) <= 128);

struct RopeKvParams {  // = `Params` in shaders/rope_kv.comp
  uint32_t tokens, heads, kv_heads, half_d, cache_rows;
  int32_t slot;
  uint32_t seq_tokens;
};

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

void rope_kv_cache_forward(vk::Recorder& rec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                           const Tensor& v_cache, const Tensor& positions, const Tensor& inv_freq, const Tensor& offsets,
                           int32_t slot, uint32_t seq_tokens) {
  const char* op = "rope_kv_cache_forward";
  require_dtype(q, {DType::f32, DType::f16}, op, "q");
  for (const auto& [t, name] : {std::pair{&k, "k"}, {&v, "v"}, {&k_cache, "k_cache"}, {&v_cache, "v_cache"}})
    require(t->dtype() == q.dtype(), op,
            std::string("dtypes differ: ") + name + " " + t->describe() + ", q " + q.describe());
  require(q.rank() >= 2 && k.rank() >= 2 && k_cache.rank() >= 2, op,
          "q, k and the caches are [..., heads, D]: " + q.describe() + ", " + k.describe() + ", " + k_cache.describe());
  const uint32_t heads = q.dim(-2), kv_heads = k.dim(-2), head_dim = q.dim(-1);
  require(head_dim % 2 == 0 && head_dim > 0 && heads > 0 && kv_heads > 0 && k.dim(-1) == head_dim, op,
          "q is " + q.describe() + ", k " + k.describe() + "; expected [..., H, D] and [..., KV, D] with D even");
  const uint64_t tokens = q.numel() / (uint64_t(heads) * head_dim);
  require(k.numel() == tokens * kv_heads * head_dim, op, "k is " + k.describe() + " for q " + q.describe());
  require_shape(v, k.shape(), op, "v");
  require(k_cache.dim(-2) == kv_heads && k_cache.dim(-1) == head_dim, op,
          "k_cache is " + k_cache.describe() + " for k " + k.describe());
  require_shape(v_cache, k_cache.shape(), op, "v_cache");
  require_dtype(positions, {DType::i32}, op, "positions");
  require_numel(positions, tokens, op, "positions");
  require_dtype(inv_freq, {DType::f32}, op, "inv_freq");
  require_numel(inv_freq, head_dim / 2, op, "inv_freq");
  require_dtype(offsets, {DType::i32}, op, "offsets");
  // With seq_tokens, sequence b's tokens go to cache b of k_cache [sequences, S, KV, D] at offsets[slot + b].
  const uint64_t sequences = seq_tokens ? tokens / seq_tokens : 1;
  if (seq_tokens) {
    require(tokens % seq_tokens == 0 && k_cache.rank() == 4 && k_cache.dim(0) == sequences && slot >= 0, op,
            std::to_string(tokens) + " tokens in sequences of " + std::to_string(seq_tokens) + " for caches " +
                k_cache.describe() + " (one [S, KV, D] cache a sequence) and slot " + std::to_string(slot));
  }
  require(slot < 0 || uint64_t(slot) + sequences <= offsets.numel(), op,
          "slot " + std::to_string(slot) + " is past " + offsets.describe());
  const uint64_t cache_rows = k_cache.numel() / (uint64_t(kv_heads) * head_dim) / sequences;
  const uint64_t pairs = tokens * (heads + kv_heads) * (head_dim / 2);
  rec.dispatch(variant(vk::family::rope_kv, {q.dtype()}, op),
               {inout(q), in(k), in(v), in(positions), in(inv_freq), out(k_cache), out(v_cache), in(offsets)},
               RopeKvParams{.tokens = uint32_t(tokens), .heads = heads, .kv_heads = kv_heads, .half_d = head_dim / 2,
                            .cache_rows = uint32_t(cache_rows), .slot = slot, .seq_tokens = seq_tokens},
               {std::min<uint32_t>(ceil_div(pairs, kThreads), 4096), 1, 1}, {.local_x = kThreads});
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

void rope_kv_cache_forward(std::span<float> q, std::span<const float> k, std::span<const float> v,
                           std::span<float> k_cache, std::span<float> v_cache, std::span<const int32_t> positions,
                           std::span<const int32_t> offsets, int32_t slot, uint32_t head_dim, uint32_t kv_heads,
                           float theta, uint32_t seq_tokens) {
  const std::vector<float> q_in(q.begin(), q.end());
  rotate<float>(q, q_in, positions, head_dim, theta, 1.0f);
  std::vector<float> k_rot(k.size());
  rotate<float>(k_rot, k, positions, head_dim, theta, 1.0f);
  const size_t tokens = positions.size(), per_seq = seq_tokens ? seq_tokens : tokens;
  const size_t row = size_t(kv_heads) * head_dim, cache_rows = k_cache.size() / row / (tokens / per_seq);
  for (size_t t = 0; t < tokens; ++t) {
    const size_t b = t / per_seq, i = t % per_seq;
    const size_t d0 = slot >= 0 ? size_t(std::max(offsets[size_t(slot) + b], 0)) : 0;
    if (d0 + i >= cache_rows) continue;  // past the cache's end
    const size_t at = (b * cache_rows + d0 + i) * row;
    std::copy_n(k_rot.begin() + long(t * row), row, k_cache.begin() + long(at));
    std::copy_n(v.begin() + long(t * row), row, v_cache.begin() + long(at));
  }
}
}  // namespace ref

}  // namespace ls::ops
