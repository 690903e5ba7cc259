#include "ops/norms.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "ops/common.h"
#include "ops/matmul.h"
#include "ops/norms_params.h"

namespace ls::ops {

namespace {
using detail::NormBackwardParams;
using detail::NormParams;

// One workgroup per row, sized to the row (64..256 threads), so short rows (per-head norms, C = 128)
// don't leave most threads idle. Rows beyond 65535 are covered by the kernels' grid-stride loop.
// LORASTUDIO_NORM_THREADS (32 to 256, a power of two) caps it, for measurement: the 0.5B shape's rows of 896
// take 256 threads at 3.5 values each, between two barriers.
vk::Spec row_threads(uint32_t cols) {
  static const uint32_t cap = [] {
    const char* v = std::getenv("LORASTUDIO_NORM_THREADS");
    const int n = v && *v ? std::atoi(v) : 0;
    return n >= 32 && n <= 256 && std::has_single_bit(unsigned(n)) ? uint32_t(n) : 256u;
  }();
  return {.local_x = std::min(cap, std::clamp<uint32_t>(std::bit_ceil(cols), 64, 256))};
}
// The weight-gradient kernels: 32 columns per workgroup, grid-stride beyond 65535 workgroups.
constexpr uint32_t kGradCols = 32;
vk::Groups column_groups(uint32_t cols) { return {std::min<uint32_t>(ceil_div(cols, kGradCols), 65535), 1, 1}; }

constexpr std::initializer_list<DType> kActivationTypes = {DType::f32, DType::f16};
constexpr std::initializer_list<DType> kWeightTypes = {DType::f32, DType::f16, DType::bf16};

// x: a defined tensor of rank >= 1 with a non-empty last dimension (the normalised one).
void require_rows(const Tensor& x, const char* op, const char* name) {
  require_defined(x, op, name);
  require(x.rank() >= 1 && x.cols() > 0, op,
          std::string(name) + " is " + x.describe() + "; the last dimension must be non-empty");
}

void require_weight(const Tensor& w, uint32_t cols, const char* op, const char* name) {
  require_dtype(w, kWeightTypes, op, name);
  require_shape(w, {cols}, op, name);
}

void require_stat(const Tensor& s, uint64_t rows, const char* op, const char* name) {
  require_dtype(s, {DType::f32}, op, name);
  require_numel(s, rows, op, name);
}

void require_eps(float eps, const char* op) {
  require(std::isfinite(eps) && eps >= 0.0f, op, "eps must be finite and >= 0, got " + std::to_string(eps));
}

// Forward checks shared by both norms: x f32/f16, y like x, w [C] of a weight dtype.
void require_forward(const Tensor& y, const Tensor& x, const Tensor& w, float eps, const char* op,
                     bool mixed_ok = false) {
  require_rows(x, op, "x");
  require_dtype(x, kActivationTypes, op, "x");
  require_shape(y, x.shape(), op, "y");
  require(mixed_ok || y.dtype() == x.dtype(), op, "dtypes differ: y " + y.describe() + ", x " + x.describe());
  require_weight(w, x.cols(), op, "w");
  require_eps(eps, op);
}

// Backward checks shared by both norms: dy, x, dx f32 of one shape, w [C] of a weight dtype.
void require_backward(const Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& w, const char* op) {
  require_rows(x, op, "x");
  require_dtype(x, {DType::f32}, op, "x");
  require_dtype(dy, {DType::f32}, op, "dy");
  require_shape(dy, x.shape(), op, "dy");
  require_dtype(dx, {DType::f32}, op, "dx");
  require_shape(dx, x.shape(), op, "dx");
  require_weight(w, x.cols(), op, "w");
}

void require_grad(const Tensor& g, uint32_t cols, const char* op, const char* name) {
  require_dtype(g, {DType::f32}, op, name);
  require_shape(g, {cols}, op, name);
}

// Partial sums standing for `t` (ops/split_sums.h): f32, [splits·rows, cols] of t's rows and cols.
void require_split_sums(const SplitSums& sums, const Tensor& t, const char* op, const char* name) {
  require_dtype(sums.partial, {DType::f32}, op, (std::string(name) + "'s partial sums").c_str());
  require(sums.lanes >= 1 && sums.lanes <= 32 && std::has_single_bit(sums.lanes), op,
          std::string(name) + "'s partial sums: " + std::to_string(sums.lanes) + " lanes (a power of two to 32)");
  require(sums.partial.numel() == uint64_t(sums.splits) * t.numel() && sums.partial.cols() == t.cols(), op,
          std::string(name) + "'s partial sums are " + sums.partial.describe() + ", not " + std::to_string(sums.splits) +
              " slices of " + t.describe());
}

using vk::Kernel;

// rms_norm_f32_to_f16_<w>: the kernel names give its family as rms_norm_f32_to with types (f16, w).
Kernel rms_norm_kernel(const Tensor& x, bool to_f16, const Tensor& w, const char* op) {
  return to_f16 ? variant(vk::family::rms_norm_f32_to, {DType::f16, w.dtype()}, op)
                : variant(vk::family::rms_norm, {x.dtype(), w.dtype()}, op);
}
}  // namespace

void rms_norm_forward(vk::Recorder& rec, const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& w,
                      float eps) {
  const char* op = "rms_norm_forward";
  // f32 x into f16 y is the one mixed pair (the residual stream into f16 matmul inputs).
  const bool to_f16 = x.dtype() == DType::f32 && y.dtype() == DType::f16;
  require_forward(y, x, w, eps, op, to_f16);
  require_stat(rstd, x.rows(), op, "rstd");
  rec.dispatch(rms_norm_kernel(x, to_f16, w, op), {in(x), in(w), out(y), out(rstd)},
               NormParams{.rows = uint32_t(x.rows()), .cols = x.cols(), .eps = eps}, grid_stride_rows(x.rows()),
               row_threads(x.cols()));
}

void rms_norm_forward_add(vk::Recorder& rec, const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& a,
                          const Tensor& b, const Tensor& w, float eps, const Tensor& x_copy, const SplitSums& b_sums) {
  const char* op = "rms_norm_forward_add";
  // The f32 residual stream only: an f16 sum, rounded before the norm reads it, came out unrounded on the H100
  // (session 19, call 3: the driver folds the f32 -> f16 -> f32 round trip).
  require_dtype(x, {DType::f32}, op, "x");
  const bool to_f16 = y.dtype() == DType::f16;
  require_forward(y, x, w, eps, op, to_f16);
  require_stat(rstd, x.rows(), op, "rstd");
  for (const auto& [t, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
    require_shape(*t, x.shape(), op, name);
    require(t->dtype() == x.dtype(), op, std::string("dtypes differ: ") + name + " " + t->describe() + ", x " + x.describe());
  }
  if (x_copy.defined()) {
    require_shape(x_copy, x.shape(), op, "x_copy");
    require(x_copy.dtype() == x.dtype(), op, "dtypes differ: x_copy " + x_copy.describe() + ", x " + x.describe());
  }
  if (b_sums.defined()) require_split_sums(b_sums, x, op, "b");
  const Tensor& b_read = b_sums.defined() ? b_sums.partial : b;
  vk::Spec spec = row_threads(x.cols());
  spec.constants = {x_copy.defined() ? 2u : 1u, b_sums.splits, b_sums.lanes};
  rec.dispatch(rms_norm_kernel(x, to_f16, w, op),
               {in(a), in(w), out(y), out(rstd), in(b_read), out(x), x_copy.defined() ? out(x_copy) : in(b_read)},
               NormParams{.rows = uint32_t(x.rows()), .cols = x.cols(), .eps = eps}, grid_stride_rows(x.rows()), spec);
}

void rms_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dw, const Tensor& dy, const Tensor& x,
                       const Tensor& w, const Tensor& rstd, bool accumulate) {
  const char* op = "rms_norm_backward";
  require_backward(dx, dy, x, w, op);
  require_stat(rstd, x.rows(), op, "rstd");
  if (dw.defined()) require_grad(dw, x.cols(), op, "dw");
  // dw first: the two kernels are independent, so no barrier separates them.
  if (dw.defined())
    rec.dispatch(Kernel::rms_norm_backward_dw, {in(dy), in(x), in(rstd), inout(dw)},
                 NormBackwardParams{.rows = uint32_t(x.rows()), .cols = x.cols()}, column_groups(x.cols()));
  rms_norm_backward(rec, dx, dy, x, w, rstd, accumulate, {});
}

void rms_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& w,
                       const Tensor& rstd, bool accumulate, const NormBackwardMore& more) {
  const char* op = "rms_norm_backward";
  require_backward(dx, dy, x, w, op);
  require_stat(rstd, x.rows(), op, "rstd");
  if (more.dy2.defined()) {
    require_dtype(more.dy2, {DType::f32}, op, "dy2");
    require_shape(more.dy2, dy.shape(), op, "dy2");
  }
  if (more.dy_sums.defined()) require_split_sums(more.dy_sums, dy, op, "dy");
  if (more.dy2_sums.defined()) {
    require(more.dy2.defined(), op, "dy2's partial sums without dy2");
    require_split_sums(more.dy2_sums, more.dy2, op, "dy2");
  }
  const Tensor& dy_read = more.dy_sums.defined() ? more.dy_sums.partial : dy;
  const Tensor& dy2_read = more.dy2_sums.defined() ? more.dy2_sums.partial : more.dy2.defined() ? more.dy2 : dy_read;
  const bool copy = more.f16_copy && cm2_products(rec.device());
  std::shared_ptr<vk::Allocation> dx16;
  if (copy) dx16 = rec.scratch(dx.numel() * 2, vk::Recorder::kScratchCm2A);
  const NormBackwardParams params{.rows = uint32_t(x.rows()), .cols = x.cols()};
  vk::Spec spec = row_threads(x.cols());
  spec.constants = {accumulate ? 1u : 0u, more.dy2.defined() ? 1u : 0u, copy ? 1u : 0u, more.dy_sums.splits,
                    more.dy_sums.lanes, more.dy2_sums.splits, more.dy2_sums.lanes};
  const Tensor copy_t = copy ? Tensor::view(rec.device(), dx16, dx.shape(), DType::f16) : dx;
  rec.dispatch(variant(vk::family::rms_norm_backward, {DType::f32, w.dtype()}, op),
               {in(dy_read), in(x), in(w), in(rstd), accumulate ? inout(dx) : out(dx), in(dy2_read),
                copy ? out(copy_t) : in(dy_read)},
               params, grid_stride_rows(x.rows()), spec);
  if (copy) remember_f16_copy(rec, dx, std::move(dx16));
}

void layer_norm_forward(vk::Recorder& rec, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& w, const Tensor& b, float eps) {
  const char* op = "layer_norm_forward";
  require_forward(y, x, w, eps, op);
  require_weight(b, x.cols(), op, "b");
  require(b.dtype() == w.dtype(), op, "dtypes differ: b " + b.describe() + ", w " + w.describe());
  require_stat(mean, x.rows(), op, "mean");
  require_stat(rstd, x.rows(), op, "rstd");
  rec.dispatch(variant(vk::family::layer_norm, {x.dtype(), w.dtype()}, op),
               {in(x), in(w), in(b), out(y), out(mean), out(rstd)},
               NormParams{.rows = uint32_t(x.rows()), .cols = x.cols(), .eps = eps}, grid_stride_rows(x.rows()),
               row_threads(x.cols()));
}

void layer_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy,
                         const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm_backward";
  require_backward(dx, dy, x, w, op);
  require_stat(mean, x.rows(), op, "mean");
  require_stat(rstd, x.rows(), op, "rstd");
  require(dw.defined() == db.defined(), op, "dw and db must both be given or both be empty");
  if (dw.defined()) {
    require_grad(dw, x.cols(), op, "dw");
    require_grad(db, x.cols(), op, "db");
  }
  const NormBackwardParams params{.rows = uint32_t(x.rows()), .cols = x.cols()};
  if (dw.defined())
    rec.dispatch(Kernel::layer_norm_backward_dw_db, {in(dy), in(x), in(mean), in(rstd), inout(dw), inout(db)}, params,
                 column_groups(x.cols()));
  rec.dispatch(variant(vk::family::layer_norm_backward, {DType::f32, w.dtype()}, op), {in(dy), in(x), in(w), in(mean), in(rstd), out(dx)},
               params, grid_stride_rows(x.rows()), row_threads(x.cols()));
}

namespace ref {
namespace {
template <class T>
void rms_norm_forward_impl(std::span<T> y, std::span<T> rstd, std::span<const T> x, std::span<const T> w, T eps) {
  const size_t cols = w.size(), rows = x.size() / cols;
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = &x[r * cols];
    double sum_sq = 0;
    for (size_t c = 0; c < cols; ++c) sum_sq += double(xr[c]) * double(xr[c]);
    const double s = 1.0 / std::sqrt(sum_sq / double(cols) + double(eps));
    rstd[r] = T(s);
    for (size_t c = 0; c < cols; ++c) y[r * cols + c] = T(double(xr[c]) * s * double(w[c]));
  }
}

template <class T>
void rms_norm_backward_impl(std::span<T> dx, std::span<T> dw, std::span<const T> dy, std::span<const T> x,
                            std::span<const T> w, std::span<const T> rstd) {
  const size_t cols = w.size(), rows = x.size() / cols;
  std::vector<double> dw_sum(cols, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const size_t base = r * cols;
    const double s = rstd[r];
    double sum_gx = 0;
    for (size_t c = 0; c < cols; ++c) sum_gx += double(w[c]) * double(dy[base + c]) * double(x[base + c]);
    const double k = s * s * s * sum_gx / double(cols);
    for (size_t c = 0; c < cols; ++c) {
      dx[base + c] = T(s * double(w[c]) * double(dy[base + c]) - k * double(x[base + c]));
      dw_sum[c] += double(dy[base + c]) * double(x[base + c]) * s;
    }
  }
  if (!dw.empty())
    for (size_t c = 0; c < cols; ++c) dw[c] = T(double(dw[c]) + dw_sum[c]);
}

template <class T>
void layer_norm_forward_impl(std::span<T> y, std::span<T> mean, std::span<T> rstd, std::span<const T> x,
                             std::span<const T> w, std::span<const T> b, T eps) {
  const size_t cols = w.size(), rows = x.size() / cols;
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = &x[r * cols];
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += double(xr[c]);
    const double m = sum / double(cols);
    double sum_sq = 0;
    for (size_t c = 0; c < cols; ++c) sum_sq += (double(xr[c]) - m) * (double(xr[c]) - m);
    const double s = 1.0 / std::sqrt(sum_sq / double(cols) + double(eps));
    mean[r] = T(m);
    rstd[r] = T(s);
    for (size_t c = 0; c < cols; ++c) y[r * cols + c] = T((double(xr[c]) - m) * s * double(w[c]) + double(b[c]));
  }
}

template <class T>
void layer_norm_backward_impl(std::span<T> dx, std::span<T> dw, std::span<T> db, std::span<const T> dy,
                              std::span<const T> x, std::span<const T> w, std::span<const T> mean,
                              std::span<const T> rstd) {
  const size_t cols = w.size(), rows = x.size() / cols;
  std::vector<double> dw_sum(cols, 0.0), db_sum(cols, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const size_t base = r * cols;
    const double m = mean[r], s = rstd[r];
    auto xhat = [&](size_t c) { return (double(x[base + c]) - m) * s; };
    double sum_g = 0, sum_gxhat = 0;
    for (size_t c = 0; c < cols; ++c) {
      const double g = double(w[c]) * double(dy[base + c]);
      sum_g += g;
      sum_gxhat += g * xhat(c);
    }
    const double mean_g = sum_g / double(cols), mean_gxhat = sum_gxhat / double(cols);
    for (size_t c = 0; c < cols; ++c) {
      const double g = double(w[c]) * double(dy[base + c]);
      dx[base + c] = T(s * (g - mean_g - xhat(c) * mean_gxhat));
      dw_sum[c] += double(dy[base + c]) * xhat(c);
      db_sum[c] += double(dy[base + c]);
    }
  }
  for (size_t c = 0; c < dw.size(); ++c) dw[c] = T(double(dw[c]) + dw_sum[c]);
  for (size_t c = 0; c < db.size(); ++c) db[c] = T(double(db[c]) + db_sum[c]);
}
}  // namespace

void rms_norm_forward(std::span<float> y, std::span<float> rstd, std::span<const float> x, std::span<const float> w,
                      float eps) {
  rms_norm_forward_impl(y, rstd, x, w, eps);
}
void rms_norm_forward(std::span<double> y, std::span<double> rstd, std::span<const double> x,
                      std::span<const double> w, double eps) {
  rms_norm_forward_impl(y, rstd, x, w, eps);
}
void rms_norm_backward(std::span<float> dx, std::span<float> dw, std::span<const float> dy, std::span<const float> x,
                       std::span<const float> w, std::span<const float> rstd) {
  rms_norm_backward_impl(dx, dw, dy, x, w, rstd);
}
void rms_norm_backward(std::span<double> dx, std::span<double> dw, std::span<const double> dy,
                       std::span<const double> x, std::span<const double> w, std::span<const double> rstd) {
  rms_norm_backward_impl(dx, dw, dy, x, w, rstd);
}
void layer_norm_forward(std::span<float> y, std::span<float> mean, std::span<float> rstd, std::span<const float> x,
                        std::span<const float> w, std::span<const float> b, float eps) {
  layer_norm_forward_impl(y, mean, rstd, x, w, b, eps);
}
void layer_norm_forward(std::span<double> y, std::span<double> mean, std::span<double> rstd,
                        std::span<const double> x, std::span<const double> w, std::span<const double> b, double eps) {
  layer_norm_forward_impl(y, mean, rstd, x, w, b, eps);
}
void layer_norm_backward(std::span<float> dx, std::span<float> dw, std::span<float> db, std::span<const float> dy,
                         std::span<const float> x, std::span<const float> w, std::span<const float> mean,
                         std::span<const float> rstd) {
  layer_norm_backward_impl(dx, dw, db, dy, x, w, mean, rstd);
}
void layer_norm_backward(std::span<double> dx, std::span<double> dw, std::span<double> db,
                         std::span<const double> dy, std::span<const double> x, std::span<const double> w,
                         std::span<const double> mean, std::span<const double> rstd) {
  layer_norm_backward_impl(dx, dw, db, dy, x, w, mean, rstd);
}
}  // namespace ref

}  // namespace ls::ops
