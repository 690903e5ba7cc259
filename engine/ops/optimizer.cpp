#include "ops/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ops/common.h"

namespace ls::ops {

namespace {
constexpr uint32_t kTensorsPerDispatch = 7;  // bindings 0..6; binding 7 takes the partial sums

struct CountParams {  // = Params in shaders/optimizer.comp (ADAMW, SUMSQ_FINAL, FILL_ZERO)
  uint32_t n;
};
static_assert(sizeof(CountParams) <= 128);

struct SumsqPartialParams {  // = Params in shaders/optimizer.comp (SUMSQ_PARTIAL)
  uint32_t count;
  uint32_t slots;
  uint32_t n[kTensorsPerDispatch];
  uint32_t first_group[kTensorsPerDispatch + 1];
};
static_assert(sizeof(SumsqPartialParams) <= 128);

struct ClipScaleParams {  // = Params in shaders/optimizer.comp (CLIP_SCALE)
  float max_norm;
};
static_assert(sizeof(ClipScaleParams) <= 128);

constexpr uint32_t kThreads = 256;
constexpr uint32_t kFinalThreads = 1024;
constexpr uint32_t kChunk = kThreads * 16;  // elements per partial sum, until a tensor has kMaxParts of them
constexpr uint32_t kMaxParts = 1024;        // per tensor: 7 * 1024 workgroups per dispatch stay below 65535
// Partial-sum slots are handed out in rows of 64 floats (256 bytes, the largest minStorageBufferOffsetAlignment
// a device may have), so each dispatch binds its own slice and consecutive dispatches need no barrier.
constexpr uint32_t kSlotRow = 64;
constexpr uint64_t kMaxElements = uint64_t(1) << 31;  // 32-bit indices with room for the grid stride

vk::Groups groups_for(uint64_t n) { return {std::min<uint32_t>(ceil_div(n, kThreads), 4096), 1, 1}; }

void require_f32_elements(const Tensor& t, const char* op, const std::string& name) {
  require_dtype(t, {DType::f32}, op, name.c_str());
  require(t.numel() > 0 && t.numel() < kMaxElements, op,
          name + " is " + t.describe() + "; expected 1 to 2^31 - 1 elements");
}

void require_hyper(const Tensor& hyper, const char* op) {
  require_dtype(hyper, {DType::f32}, op, "hyper");
  require_numel(hyper, kHyperSlots, op, "hyper");
}
}  // namespace

void adamw_step(vk::Recorder& rec, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                const Tensor& hyper) {
  const char* op = "adamw_step";
  require_f32_elements(param, op, "param");
  require_dtype(grad, {DType::f32}, op, "grad");
  require_shape(grad, param.shape(), op, "grad");
  require_dtype(m, {DType::f32}, op, "m");
  require_shape(m, param.shape(), op, "m");
  require_dtype(v, {DType::f32}, op, "v");
  require_shape(v, param.shape(), op, "v");
  require_hyper(hyper, op);
  rec.dispatch(vk::Kernel::adamw_step, {inout(param), in(grad), inout(m), inout(v), in(hyper)},
               CountParams{.n = uint32_t(param.numel())}, groups_for(param.numel()), {.local_x = kThreads});
}

void grad_sumsq(vk::Recorder& rec, const Tensor& sumsq, std::span<const Tensor> grads) {
  const char* op = "grad_sumsq";
  require_dtype(sumsq, {DType::f32}, op, "sumsq");
  require_numel(sumsq, 1, op, "sumsq");
  require(!grads.empty(), op, "no gradient tensors");
  for (size_t i = 0; i < grads.size(); ++i) require_f32_elements(grads[i], op, "grads[" + std::to_string(i) + "]");

  // Plan: which workgroups and partial slots each dispatch gets.
  struct Dispatch {
    size_t first;         // index of its first tensor in grads
    uint64_t first_row, rows;
    SumsqPartialParams params;
  };
  std::vector<Dispatch> plan;
  uint64_t rows = 0;
  for (size_t first = 0; first < grads.size(); first += kTensorsPerDispatch) {
    Dispatch d{.first = first, .first_row = rows, .rows = 0, .params = {}};
    d.params.count = uint32_t(std::min<size_t>(kTensorsPerDispatch, grads.size() - first));
    for (uint32_t k = 0; k < d.params.count; ++k) {
      const uint64_t n = grads[first + k].numel();
      d.params.n[k] = uint32_t(n);
      d.params.first_group[k + 1] = d.params.first_group[k] + std::min(ceil_div(n, kChunk), kMaxParts);
    }
    const uint32_t groups = d.params.first_group[d.params.count];
    d.rows = ceil_div(groups, kSlotRow);
    d.params.slots = uint32_t(d.rows * kSlotRow);
    rows += d.rows;
    plan.push_back(d);
  }

  // Kept alive by the program, like every buffer a dispatch binds.
  Tensor partials = Tensor::empty(rec.device(), {uint32_t(rows), kSlotRow}, DType::f32, "grad_sumsq partials");
  for (const Dispatch& d : plan) {
    std::array<vk::Use, kTensorsPerDispatch + 1> uses;
    for (uint32_t k = 0; k < kTensorsPerDispatch; ++k) uses[k] = in(grads[d.first + (k < d.params.count ? k : 0)]);
    uses[kTensorsPerDispatch] = out(partials.slice_rows(d.first_row, d.first_row + d.rows));
    rec.dispatch_raw(vk::Kernel::grad_sumsq_partial, uses, &d.params, sizeof d.params,
                     {d.params.first_group[d.params.count], 1, 1}, {.local_x = kThreads});
  }
  rec.dispatch(vk::Kernel::grad_sumsq_final, {in(partials), out(sumsq)}, CountParams{.n = uint32_t(partials.numel())},
               {1, 1, 1}, {.local_x = kFinalThreads});
}

void clip_scale(vk::Recorder& rec, const Tensor& hyper, const Tensor& norm_out, const Tensor& sumsq, float max_norm) {
  const char* op = "clip_scale";
  require_hyper(hyper, op);
  require_dtype(norm_out, {DType::f32}, op, "norm_out");
  require_numel(norm_out, 1, op, "norm_out");
  require_dtype(sumsq, {DType::f32}, op, "sumsq");
  require_numel(sumsq, 1, op, "sumsq");
  require(std::isfinite(max_norm), op, "max_norm is " + std::to_string(max_norm) + "; expected a finite number");
  rec.dispatch(vk::Kernel::clip_scale, {in(sumsq), out(hyper), out(norm_out)}, ClipScaleParams{.max_norm = max_norm},
               {1, 1, 1}, {.local_x = 1});
}

void fill_zero(vk::Recorder& rec, const Tensor& t) {
  const char* op = "fill_zero";
  require_defined(t, op, "t");
  require(t.numel() > 0 && t.bytes() / 2 < kMaxElements, op,
          "t is " + t.describe() + "; expected 1 to 2^32 - 1 bytes");
  const bool words32 = t.bytes() % 4 == 0;
  const uint64_t words = words32 ? t.bytes() / 4 : t.bytes() / 2;
  rec.dispatch(words32 ? vk::Kernel::fill_zero_u32 : vk::Kernel::fill_zero_u16, {out(t)},
               CountParams{.n = uint32_t(words)}, groups_for(words), {.local_x = kThreads});
}

namespace ref {
void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v,
                std::span<const float> hyper) {
  const float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], weight_decay = hyper[4];
  const float clip = hyper[7];
  if (clip < 0.0f) return;  // clip_scale's marker for a non-finite gradient norm: no update
  const float decay = 1.0f - lr * weight_decay;
  const float w1 = 1.0f - beta1, w2 = 1.0f - beta2;
  const float step_size = lr / hyper[5];
  const float bias_correction2_sqrt = std::sqrt(hyper[6]);
  for (size_t i = 0; i < param.size(); ++i) {
    const float g = grad[i] * clip;
    float p = param[i] * decay;
    m[i] = w1 < 0.5f ? std::fma(w1, g - m[i], m[i]) : std::fma(w1 - 1.0f, g - m[i], g);
    const float g_scaled = w2 * g;
    v[i] = v[i] * beta2 + g_scaled * g;
    const float denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    const float update = (-step_size) * m[i];
    p = p + update / denom;
    param[i] = p;
  }
}

double grad_sumsq(std::span<const std::span<const float>> grads) {
  double sum = 0;
  for (auto g : grads)
    for (float x : g) sum += double(x) * double(x);
  return sum;
}

float clip_scale(std::span<float> hyper, float sumsq, float max_norm) {
  const float norm = std::sqrt(sumsq);
  float coef = (1.0f / (norm + 1e-6f)) * max_norm;
  if (coef > 1.0f || !(max_norm > 0.0f)) coef = 1.0f;
  hyper[7] = std::isfinite(norm) ? coef : -1.0f;
  return norm;
}
}  // namespace ref

}  // namespace ls::ops
