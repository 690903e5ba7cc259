#include "ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct RowsParams {  // = Params in shaders/cross_entropy_forward.comp and cross_entropy_reduce.comp
  uint32_t rows;
  uint32_t cols;
};
static_assert(sizeof(RowsParams) <= 128);

struct CrossEntropyBackwardParams {  // = Params in shaders/cross_entropy_backward.comp
  uint32_t rows;
  uint32_t cols;
  float dloss_scale;
  float softcap;  // 0: none
};
static_assert(sizeof(CrossEntropyBackwardParams) <= 128);

constexpr uint32_t kReduceThreads = 256;

bool counted(int32_t target, uint32_t vocab) { return target >= 0 && uint32_t(target) < vocab; }
}  // namespace

namespace {
void rows_impl(vk::Recorder& rec, const Tensor& row_loss, const Tensor& lse, const Tensor& logits,
               const Tensor& targets, const char* op) {
  require_dtype(logits, {DType::f32, DType::f16, DType::bf16}, op, "logits");
  require_matrix(logits, op, "logits");
  uint64_t n = logits.rows();
  require_row_vector(targets, DType::i32, n, op, "targets");
  require_row_vector(lse, DType::f32, n, op, "lse");
  require_row_vector(row_loss, DType::f32, n, op, "row_loss");
  RowsParams params{.rows = uint32_t(n), .cols = logits.cols()};
  rec.dispatch(variant(vk::family::cross_entropy_forward, {logits.dtype()}, op), {in(logits), in(targets), out(lse), out(row_loss)}, params,
               grid_stride_rows(n), {.local_x = row_threads_for(logits.cols())});
}

void reduce_impl(vk::Recorder& rec, const Tensor& loss, const Tensor& row_loss, const Tensor& targets,
                 uint32_t vocab, const char* op) {
  uint64_t n = row_loss.numel();
  require_row_vector(targets, DType::i32, n, op, "targets");
  require_row_vector(row_loss, DType::f32, n, op, "row_loss");
  require_dtype(loss, {DType::f32}, op, "loss");
  require_shape(loss, {2}, op, "loss");
  RowsParams params{.rows = uint32_t(n), .cols = vocab};
  rec.dispatch(vk::Kernel::cross_entropy_reduce, {in(row_loss), in(targets), out(loss)}, params, {1, 1, 1},
               {.local_x = kReduceThreads});
}

}  // namespace

void cross_entropy_rows(vk::Recorder& rec, const Tensor& row_loss, const Tensor& lse, const Tensor& logits,
                        const Tensor& targets) {
  rows_impl(rec, row_loss, lse, logits, targets, "cross_entropy_rows");
}

void cross_entropy_reduce(vk::Recorder& rec, const Tensor& loss, const Tensor& row_loss, const Tensor& targets,
                          uint32_t vocab) {
  reduce_impl(rec, loss, row_loss, targets, vocab, "cross_entropy_reduce");
}

void cross_entropy_forward(vk::Recorder& rec, const Tensor& loss, const Tensor& row_loss, const Tensor& lse,
                           const Tensor& logits, const Tensor& targets) {
  const char* op = "cross_entropy_forward";
  require_dtype(logits, {DType::f32, DType::f16, DType::bf16}, op, "logits");
  require_matrix(logits, op, "logits");
  require_dtype(loss, {DType::f32}, op, "loss");
  require_shape(loss, {2}, op, "loss");
  rows_impl(rec, row_loss, lse, logits, targets, op);
  reduce_impl(rec, loss, row_loss, targets, logits.cols(), op);
}

void cross_entropy_backward(vk::Recorder& rec, const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                            const Tensor& lse, const Tensor& loss, float dloss_scale, float softcap) {
  const char* op = "cross_entropy_backward";
  require(softcap >= 0 && std::isfinite(softcap), op, "softcap must be 0 (none) or positive");
  require_dtype(logits, {DType::f32, DType::f16, DType::bf16}, op, "logits");
  require_matrix(logits, op, "logits");
  uint64_t n = logits.rows();
  require_shape(dlogits, logits.shape(), op, "dlogits");
  require(dlogits.dtype() == DType::f32 || dlogits.dtype() == logits.dtype(), op,
          "dlogits is " + dlogits.describe() + "; expected f32 or the dtype of logits " + logits.describe());
  require_row_vector(targets, DType::i32, n, op, "targets");
  require_row_vector(lse, DType::f32, n, op, "lse");
  require_dtype(loss, {DType::f32}, op, "loss");
  require_shape(loss, {2}, op, "loss");
  rec.dispatch(variant(vk::family::cross_entropy_backward, {logits.dtype(), dlogits.dtype()}, op), {in(logits), in(targets), in(lse), in(loss), out(dlogits)},
               CrossEntropyBackwardParams{.rows = uint32_t(n), .cols = logits.cols(), .dloss_scale = dloss_scale,
                                          .softcap = softcap},
               grid_stride_rows(n), {.local_x = row_threads_for(logits.cols())});
}

namespace ref {
template <class F>
void cross_entropy_forward(std::span<F> loss, std::span<F> row_loss, std::span<F> lse, std::span<const F> logits,
                           std::span<const int32_t> targets, uint32_t vocab) {
  double sum = 0;
  size_t count = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    const F* row = logits.data() + r * vocab;
    double m = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < vocab; ++c) m = std::max(m, double(row[c]));
    double s = 0;
    for (size_t c = 0; c < vocab; ++c) s += std::exp(double(row[c]) - m);
    double row_lse = m + std::log(s);
    double l = counted(targets[r], vocab) ? row_lse - double(row[targets[r]]) : 0.0;
    lse[r] = F(row_lse);
    row_loss[r] = F(l);
    if (counted(targets[r], vocab)) {
      sum += l;
      ++count;
    }
  }
  loss[0] = F(count ? sum / double(count) : 0.0);
  loss[1] = F(count);
}

template <class F>
void cross_entropy_backward(std::span<F> dlogits, std::span<const F> logits, std::span<const int32_t> targets,
                            std::span<const F> lse, std::span<const F> loss, uint32_t vocab, double dloss_scale,
                            double softcap) {
  double count = double(loss[1]);
  double row_scale = count > 0 ? dloss_scale / count : 0.0;
  for (size_t r = 0; r < targets.size(); ++r) {
    for (size_t c = 0; c < vocab; ++c) {
      size_t i = r * vocab + c;
      double g = 0;
      if (counted(targets[r], vocab))
        g = row_scale * (std::exp(double(logits[i]) - double(lse[r])) - (size_t(targets[r]) == c ? 1.0 : 0.0));
      if (softcap > 0) g *= 1.0 - (double(logits[i]) / softcap) * (double(logits[i]) / softcap);
      dlogits[i] = F(g);
    }
  }
}

template void cross_entropy_forward<float>(std::span<float>, std::span<float>, std::span<float>,
                                           std::span<const float>, std::span<const int32_t>, uint32_t);
template void cross_entropy_forward<double>(std::span<double>, std::span<double>, std::span<double>,
                                            std::span<const double>, std::span<const int32_t>, uint32_t);
template void cross_entropy_backward<float>(std::span<float>, std::span<const float>, std::span<const int32_t>,
                                            std::span<const float>, std::span<const float>, uint32_t, double,
                                            double);
template void cross_entropy_backward<double>(std::span<double>, std::span<const double>, std::span<const int32_t>,
                                             std::span<const double>, std::span<const double>, uint32_t, double,
                                             double);
}  // namespace ref

}  // namespace ls::ops
