#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "ops/attention_flash.h"
#include "ops/attention_products.h"
#include "ops/common.h"
#include "ops/convert.h"

namespace ls::ops {

namespace {
struct AttentionParams {  // = `Params` in shaders/attention.comp and attention_backward.comp
  uint32_t B, T, S, H, KV, D;
  float scale;
  uint32_t past_on_device;  // forward only: past from a device buffer, k and v are caches of capacity S
  uint32_t window;          // 0: none; else query t sees keys past + t - window < j <= past + t
};
static_assert(sizeof(AttentionParams) <= 128);

constexpr uint32_t kThreads = 64;  // = WG in the shaders (fixed there: it sizes per-thread arrays)
constexpr uint32_t kSplitMaxQueries = 4;  // query rows per sequence up to which decoding splits the keys

AttentionParams params_for(const AttentionDims& d, float scale) {
  return {.B = d.B, .T = d.T, .S = d.S, .H = d.H, .KV = d.KV, .D = d.D, .scale = scale, .past_on_device = 0,
          .window = d.window};
}

// One workgroup per row; rows are folded into x and y so each count stays <= 65535.
vk::Groups row_groups(uint64_t rows, const char* op) {
  constexpr uint32_t kMaxX = 32768;
  require(rows <= uint64_t(kMaxX) * 65535, op, std::to_string(rows) + " rows is more than one dispatch can take");
  uint32_t x = uint32_t(std::min<uint64_t>(rows, kMaxX));
  return {x, ceil_div(rows, x), 1};
}

std::string describe(const Tensor& q, const Tensor& k, const Tensor& v) {
  return "q " + q.describe() + ", k " + k.describe() + ", v " + v.describe();
}

// Checks q [B, T, H, D], k and v [B, S, KV, D] of one of `dtypes`, and reads the dims off them.
AttentionDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, std::initializer_list<DType> dtypes,
                             const char* op) {
  require_dtype(q, dtypes, op, "q");
  require_dtype(k, dtypes, op, "k");
  require_dtype(v, dtypes, op, "v");
  require(q.dtype() == k.dtype() && v.dtype() == q.dtype(), op, "dtypes differ: " + describe(q, k, v));
  require(q.rank() == 4 && k.rank() == 4, op,
          "expected q [B, T, H, D] and k, v [B, S, KV, D]; got " + describe(q, k, v));
  require_shape(v, k.shape(), op, "v");
  AttentionDims d{.B = q.dim(0), .T = q.dim(1), .S = k.dim(1), .H = q.dim(2), .KV = k.dim(2), .D = q.dim(3)};
  require(q.numel() > 0 && k.numel() > 0, op, "zero-sized dimension: " + describe(q, k, v));
  require(k.dim(0) == d.B, op, "batch sizes differ: " + describe(q, k, v));
  require(k.dim(3) == d.D, op, "head dims differ: " + describe(q, k, v));
  require(d.D <= kAttentionMaxHeadDim, op,
          "head dim " + std::to_string(d.D) + " is over " + std::to_string(kAttentionMaxHeadDim) + ": " +
              describe(q, k, v));
  require(d.H % d.KV == 0, op,
          "query heads " + std::to_string(d.H) + " are not a multiple of kv heads " + std::to_string(d.KV) + ": " +
              describe(q, k, v));
  require(d.S >= d.T, op, "fewer keys than queries (S < T): " + describe(q, k, v));
  return d;
}
}  // namespace

void attention_forward(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                       const Tensor& v, float scale, uint32_t window) {
  const char* op = "attention_forward";
  AttentionDims d = attention_dims(q, k, v, {DType::f32, DType::f16}, op);
  d.window = window && window < d.S ? window : 0;  // a window as long as the keys changes nothing
  require_shape(o, q.shape(), op, "o");
  require(o.dtype() == q.dtype(), op, "o is " + o.describe() + "; expected the dtype of q " + q.describe());
  require_shape(lse, {d.B, d.H, d.T}, op, "lse");
  require_dtype(lse, {DType::f32}, op, "lse");
  if (d.window)
    detail::attention_forward_rows(rec, o, lse, q, k, v, d, scale);
  else if (detail::attention_flash_coopmat_fit(rec.device(), d, q.dtype()))
    detail::attention_forward_flash(rec, o, lse, q, k, v, d, scale);
  else if (detail::attention_products_fit(rec.device(), d, q.dtype()))
    detail::attention_forward_products(rec, o, lse, q, k, v, d, scale);
  else if (detail::attention_flash_fit(rec.device(), d, q.dtype()))
    detail::attention_forward_flash(rec, o, lse, q, k, v, d, scale);
  else
    detail::attention_forward_rows(rec, o, lse, q, k, v, d, scale);
}

namespace {
// Decoding's split attention combines its partials in the last workgroup of each row (shaders/attention_split.comp,
// kLastCombines) rather than in a dispatch of its own. LORASTUDIO_ATTN_COMBINE=1 keeps the combine dispatch
// (measurement, and the suite tests both).
// It needs device-scope barriers and atomics (vulkanMemoryModelDeviceScope).
bool last_workgroup_combines(const vk::Device& device) {
  static const bool separate = [] {
    const char* v = std::getenv("LORASTUDIO_ATTN_COMBINE");
    return v && std::string(v) == "1";
  }();
  return !separate && device.report().memory_model_device_scope;
}
}  // namespace

void attention_cached_forward(vk::Recorder& rec, const Tensor& o, const Tensor& q, const Tensor& k_cache,
                              const Tensor& v_cache, const Tensor& past, float scale, uint32_t window,
                              bool per_sequence, uint32_t key_bound) {
  const char* op = "attention_cached_forward";
  AttentionDims d = attention_dims(q, k_cache, v_cache, {DType::f32, DType::f16}, op);
  d.window = window && window < d.S ? window : 0;  // shorter than the cache: the row kernel applies it
  require_shape(o, q.shape(), op, "o");
  require(o.dtype() == q.dtype(), op, "o is " + o.describe() + "; expected the dtype of q " + q.describe());
  require_dtype(past, {DType::i32}, op, "past");
  require(past.numel() >= (per_sequence ? d.B : 1), op,
          "past is " + past.describe() + (per_sequence ? ", not one fill level a sequence" : ""));
  AttentionParams params = params_for(d, scale);
  params.past_on_device = per_sequence ? 2 : 1;
  const uint64_t rows = uint64_t(d.B) * d.T * d.H;
  require(!per_sequence || d.T <= kSplitMaxQueries, op, "sequences of their own take at most 4 queries each");
  if (!d.window && d.T <= kSplitMaxQueries && rows <= 65535) {
    // A few query rows (decoding): split the keys over workgroups, then combine; as many as the keys a query may
    // see (key_bound, else the whole cache).
    const uint32_t splits = ceil_div(key_bound ? std::min(key_bound, d.S) : d.S, kThreads);
    struct SplitParams {  // = `Params` in shaders/attention_split.comp
      uint32_t B, T, S, H, KV, D;
      float scale;
      uint32_t splits, per_seq;
    } sp{d.B, d.T, d.S, d.H, d.KV, d.D, scale, splits, per_sequence ? 1u : 0u};
    static_assert(sizeof(SplitParams) <= 128);
    Tensor part = Tensor::empty(rec.device(), {uint32_t(rows), splits, d.D + 2}, DType::f32, "attention partials");
    // The partial workgroups of a row count themselves done here; the last combines (and sets it back to 0).
    Tensor done = Tensor::empty(rec.device(), {uint32_t(rows)}, DType::i32, "attention splits done");
    upload(done, std::vector<int32_t>(rows, 0));
    const bool last_combines = last_workgroup_combines(rec.device());
    vk::Spec partial_spec{.local_x = kThreads};
    partial_spec.constants = {d.D % 8 == 0 && d.D / 8 <= kThreads ? 1u : 0u,  // 16-byte loads (kVec)
                              last_combines ? 1u : 0u};                         // kLastCombines
    rec.dispatch(variant(vk::family::attention_split_partial, {q.dtype()}, op),
                 {in(q), in(k_cache), in(v_cache), last_combines ? out(o) : in(o), inout(part), in(past), inout(done)},
                 sp, {uint32_t(rows), splits, 1}, partial_spec);
    if (!last_combines)
      rec.dispatch(variant(vk::family::attention_split_combine, {q.dtype()}, op),
                   {in(q), in(k_cache), in(v_cache), out(o), in(part), in(past)}, sp, {uint32_t(rows), 1, 1},
                   {.local_x = kThreads});
    return;
  }
  // The log-sum-exp is not needed at inference; the kernel writes it to a scratch the program keeps.
  Tensor lse = Tensor::empty(rec.device(), {d.B, d.H, d.T}, DType::f32, "attention lse (unused)");
  if (!d.window && !per_sequence && detail::attention_flash_fit(rec.device(), d, q.dtype())) {
    // Prefill. f32 activations ask for exact inference (the golden tests against transformers): f32 math.
    detail::attention_forward_flash(rec, o, lse, q, k_cache, v_cache, d, scale, past, q.dtype() != DType::f32);
    return;
  }
  rec.dispatch(variant(vk::family::attention, {q.dtype()}, op), {in(q), in(k_cache), in(v_cache), out(o), out(lse), in(past)},
               params, row_groups(rows, op), {.local_x = kThreads});
}

bool attention_backward_takes_split_do(vk::Device& device, const Tensor& q, const Tensor& k, const Tensor& v,
                                       uint32_t window) {
  AttentionDims d = attention_dims(q, k, v, {DType::f32, DType::f16}, "attention_backward");
  if (window && window < d.S) return false;
  if (q.dtype() == DType::f16 && !detail::attention_flash_backward_f16_fit(device, d)) return false;
  return detail::attention_flash_coopmat_fit(device, d, q.dtype()) &&
         detail::flash_backward_reads_delta_pass(device, d, q.dtype());
}

void attention_backward(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& do_,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& lse,
                        float scale, uint32_t window, const SplitSums& do_sums) {
  const char* op = "attention_backward";
  AttentionDims d = attention_dims(q, k, v, {DType::f32, DType::f16}, op);
  d.window = window && window < d.S ? window : 0;
  require_shape(o, q.shape(), op, "o");
  require_shape(do_, q.shape(), op, "do");
  require_shape(dq, q.shape(), op, "dq");
  require_shape(dk, k.shape(), op, "dk");
  require_shape(dv, k.shape(), op, "dv");
  require_shape(lse, {d.B, d.H, d.T}, op, "lse");
  require(o.dtype() == q.dtype(), op, "o is " + o.describe() + "; expected the dtype of q " + q.describe());
  require_dtype(do_, {DType::f32}, op, "do");
  require_dtype(dq, {DType::f32}, op, "dq");
  require_dtype(dk, {DType::f32}, op, "dk");
  require_dtype(dv, {DType::f32}, op, "dv");
  require_dtype(lse, {DType::f32}, op, "lse");
  if (q.dtype() == DType::f16 && !detail::attention_flash_backward_f16_fit(rec.device(), d)) {
    // Only the cooperative-matrix-2 kernels read f16 inputs: the others get f32 copies.
    auto widened = [&](const Tensor& x) {
      Tensor y = Tensor::empty(rec.device(), x.shape(), DType::f32, "attention_backward f32 input");
      convert_forward(rec, y, x);
      return y;
    };
    return attention_backward(rec, dq, dk, dv, do_, widened(q), widened(k), widened(v), widened(o), lse, scale,
                              window, do_sums);
  }
  const bool flash_cm = !d.window && detail::attention_flash_coopmat_fit(rec.device(), d, q.dtype());
  if (do_sums.defined() && !flash_cm) fail(op, "internal: dO's split sums on a path that reads dO itself");
  if (d.window)
    detail::attention_backward_rows(rec, dq, dk, dv, do_, q, k, v, o, lse, d, scale);
  else if (flash_cm)
    detail::attention_backward_flash(rec, dq, dk, dv, do_, q, k, v, o, lse, d, scale, do_sums);
  else if (detail::attention_products_fit(rec.device(), d, q.dtype()))
    detail::attention_backward_products(rec, dq, dk, dv, do_, q, k, v, o, lse, d, scale);
  else if (detail::attention_flash_fit(rec.device(), d, q.dtype()))
    detail::attention_backward_flash(rec, dq, dk, dv, do_, q, k, v, o, lse, d, scale);
  else
    detail::attention_backward_rows(rec, dq, dk, dv, do_, q, k, v, o, lse, d, scale);
}

namespace detail {
void attention_forward_rows(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                            const Tensor& v, const AttentionDims& d, float scale) {
  // Binding 5 (past on the device) is unused here; lse stands in for it.
  rec.dispatch(variant(vk::family::attention, {q.dtype()}, "attention_forward"), {in(q), in(k), in(v), out(o), out(lse), in(lse)},
               params_for(d, scale), row_groups(uint64_t(d.B) * d.T * d.H, "attention_forward"), {.local_x = kThreads});
}

void attention_backward_rows(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                             const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                             const Tensor& lse, const AttentionDims& d, float scale) {
  const char* op = "attention_backward";
  Tensor delta = Tensor::empty(rec.device(), {d.B, d.H, d.T}, DType::f32, "attention_backward delta");
  const AttentionParams params = params_for(d, scale);  // shaders/attention_backward.comp's block is the forward's
  rec.dispatch(vk::Kernel::attention_backward_dq, {in(q), in(k), in(v), in(o), in(do_), in(lse), out(dq), out(delta)},
               params, row_groups(uint64_t(d.B) * d.T * d.H, op), {.local_x = kThreads});
  rec.dispatch(vk::Kernel::attention_backward_dkdv,
               {in(q), in(k), in(v), in(do_), in(lse), in(delta), out(dk), out(dv)}, params,
               row_groups(uint64_t(d.B) * d.S * d.KV, op), {.local_x = kThreads});
}
}  // namespace detail

namespace ref {
namespace {
// Flat offsets of q/o/do [B, T, H, D], k/v [B, S, KV, D] rows and lse [B, H, T].
struct Index {
  const AttentionDims& d;
  size_t query(uint32_t b, uint32_t t, uint32_t h) const { return ((size_t(b) * d.T + t) * d.H + h) * d.D; }
  size_t key(uint32_t b, uint32_t j, uint32_t g) const { return ((size_t(b) * d.S + j) * d.KV + g) * d.D; }
  size_t stat(uint32_t b, uint32_t h, uint32_t t) const { return (size_t(b) * d.H + h) * d.T + t; }
};

template <class F>
double dot(const F* a, const F* b, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

template <class F>
void forward(std::span<F> o, std::span<F> lse, std::span<const F> q, std::span<const F> k, std::span<const F> v,
             const AttentionDims& d, double scale) {
  Index ix{d};
  std::vector<double> scores(d.S), acc(d.D);
  for (uint32_t b = 0; b < d.B; ++b)
    for (uint32_t t = 0; t < d.T; ++t)
      for (uint32_t h = 0; h < d.H; ++h) {
        uint32_t g = h / (d.H / d.KV), n_keys = d.past() + t + 1, first = d.first_key(t);
        const F* qr = &q[ix.query(b, t, h)];
        double m = -INFINITY;
        for (uint32_t j = first; j < n_keys; ++j) {
          scores[j] = scale * dot(qr, &k[ix.key(b, j, g)], d.D);
          m = std::max(m, scores[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (uint32_t j = first; j < n_keys; ++j) {
          double e = std::exp(scores[j] - m);
          sum += e;
          const F* vr = &v[ix.key(b, j, g)];
          for (uint32_t c = 0; c < d.D; ++c) acc[c] += e * double(vr[c]);
        }
        for (uint32_t c = 0; c < d.D; ++c) o[ix.query(b, t, h) + c] = F(acc[c] / sum);
        lse[ix.stat(b, h, t)] = F(m + std::log(sum));
      }
}

template <class F>
void backward(std::span<F> dq, std::span<F> dk, std::span<F> dv, std::span<const F> do_, std::span<const F> q,
              std::span<const F> k, std::span<const F> v, std::span<const F> o, std::span<const F> lse,
              const AttentionDims& d, double scale) {
  Index ix{d};
  std::vector<double> gq(dq.size()), gk(dk.size()), gv(dv.size());
  for (uint32_t b = 0; b < d.B; ++b)
    for (uint32_t t = 0; t < d.T; ++t)
      for (uint32_t h = 0; h < d.H; ++h) {
        uint32_t g = h / (d.H / d.KV), n_keys = d.past() + t + 1;
        size_t qi = ix.query(b, t, h);
        double delta = dot(&do_[qi], &o[qi], d.D);
        double row_lse = double(lse[ix.stat(b, h, t)]);
        for (uint32_t j = d.first_key(t); j < n_keys; ++j) {
          size_t kj = ix.key(b, j, g);
          double p = std::exp(scale * dot(&q[qi], &k[kj], d.D) - row_lse);
          double ds = p * (dot(&do_[qi], &v[kj], d.D) - delta);
          for (uint32_t c = 0; c < d.D; ++c) {
            gq[qi + c] += scale * ds * double(k[kj + c]);
            gk[kj + c] += scale * ds * double(q[qi + c]);
            gv[kj + c] += p * double(do_[qi + c]);
          }
        }
      }
  for (size_t i = 0; i < gq.size(); ++i) dq[i] = F(gq[i]);
  for (size_t i = 0; i < gk.size(); ++i) dk[i] = F(gk[i]);
  for (size_t i = 0; i < gv.size(); ++i) dv[i] = F(gv[i]);
}
}  // namespace

void attention_forward(std::span<float> o, std::span<float> lse, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, const AttentionDims& dims, double scale) {
  forward(o, lse, q, k, v, dims, scale);
}
void attention_forward(std::span<double> o, std::span<double> lse, std::span<const double> q,
                       std::span<const double> k, std::span<const double> v, const AttentionDims& dims, double scale) {
  forward(o, lse, q, k, v, dims, scale);
}
void attention_backward(std::span<float> dq, std::span<float> dk, std::span<float> dv, std::span<const float> do_,
                        std::span<const float> q, std::span<const float> k, std::span<const float> v,
                        std::span<const float> o, std::span<const float> lse, const AttentionDims& dims,
                        double scale) {
  backward(dq, dk, dv, do_, q, k, v, o, lse, dims, scale);
}
void attention_backward(std::span<double> dq, std::span<double> dk, std::span<double> dv,
                        std::span<const double> do_, std::span<const double> q, std::span<const double> k,
                        std::span<const double> v, std::span<const double> o, std::span<const double> lse,
                        const AttentionDims& dims, double scale) {
  backward(dq, dk, dv, do_, q, k, v, o, lse, dims, scale);
}
}  // namespace ref

}  // namespace ls::ops
