// RMSNorm and LayerNorm against their CPU references, forward and backward, every dtype combination.
// Tolerances (relative, as test::expect_close measures them):
//   f32 x, y: 1e-5; f32 x with f16/bf16 weights: 1e-5 (the random weights are rounded to their dtype
//   before the reference sees them, so they are exact); f16 x, y: 2e-3 (y is rounded to f16 once).
//   Backward (all f32): dx, dw, db 1e-5; RMSNorm's dx is a difference of two terms, so its error is
//   measured against the size of those terms too (see expect_dx_close).
//   Finite differences of the reference forward, in double: 1e-6.
// Every comparison records its max error relative to max |expected| as a test property (see
// --gtest_output=xml).
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <utility>

#include "ops/matmul.h"
#include "ops/norms.h"
#include "support/testing.h"

namespace ls {
// Test names and failure messages print dtypes by name.
void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }

namespace {

constexpr float kRmsEps = 1e-6f;    // Qwen2's rms_norm_eps
constexpr float kLayerEps = 1e-5f;  // torch's LayerNorm default

double forward_tol(DType x) { return x == DType::f32 ? 1e-5 : 2e-3; }
constexpr double kBackwardTol = 1e-5;
constexpr double kFiniteDiffTol = 1e-6;

std::string sci(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", v);
  return text;
}

void expect_close(std::span<const float> actual, std::span<const float> expected, double rtol, const std::string& what,
                  const Shape& shape) {
  test::expect_close(actual, expected, rtol, what, shape);
  ::testing::Test::RecordProperty("max_rel_err_" + what, sci(test::compare(actual, expected).max_rel));
}

// rms_norm dx = rstd*w*dy - k*x with k = rstd^3*mean(w*dy*x). The two terms cancel, completely when
// C = 1 (dx = rstd*w*dy*eps/(x^2+eps)), and f32 holds the difference only to ~1e-7 of the terms. So each
// element may be off by rtol times the size of its terms as well as of dx itself.
void expect_dx_close(std::span<const float> actual, std::span<const float> expected, std::span<const float> terms,
                     double rtol, const Shape& shape) {
  size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double allowed = rtol * (std::fabs(expected[i]) + terms[i]);
    double d = std::isnan(actual[i]) ? INFINITY : std::fabs(double(actual[i]) - double(expected[i]));
    if (d > allowed) ++bad;
    if (d / allowed > worst_ratio) { worst_ratio = d / allowed; worst = i; }
  }
  EXPECT_EQ(bad, 0u) << "dx " << shape_string(shape) << ": " << bad << " elements off; worst at " << worst << ": got "
                     << actual[worst] << ", want " << expected[worst] << ", terms " << terms[worst];
  ::testing::Test::RecordProperty("max_err_to_terms_dx", sci(worst_ratio * rtol));
}

std::vector<float> zeros(size_t n) { return std::vector<float>(n, 0.0f); }

// Forward: rows x cols, x dtype, weight dtype.
using ForwardCase = std::tuple<uint32_t, uint32_t, DType, DType>;
std::string forward_name(const ::testing::TestParamInfo<ForwardCase>& info) {
  auto [rows, cols, xt, wt] = info.param;
  return "r" + std::to_string(rows) + "_c" + std::to_string(cols) + "_x" + dtype_name(xt) + "_w" + dtype_name(wt);
}

class NormForward : public test::GpuTest, public ::testing::WithParamInterface<ForwardCase> {};

TEST_P(NormForward, RmsNormMatchesReference) {
  auto [rows, cols, xt, wt] = GetParam();
  const Shape shape{rows, cols};
  auto x0 = test::rounded(test::random_values(size_t(rows) * cols, 100 + rows * 7 + cols), xt);
  auto w0 = test::rounded(test::random_values(cols, 200 + cols, 2.0f), wt);
  auto x = test::tensor_from(dev(), shape, xt, x0);
  auto w = test::tensor_from(dev(), {cols}, wt, w0);
  auto y = test::poisoned(dev(), shape, xt);
  auto rstd = test::poisoned(dev(), {rows}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::rms_norm_forward(rec, y.t, rstd.t, x, w, kRmsEps); });

  auto want_y = zeros(x0.size()), want_rstd = zeros(rows);
  ops::ref::rms_norm_forward(want_y, want_rstd, x0, w0, kRmsEps);
  expect_close(download(y.t), test::rounded(want_y, xt), forward_tol(xt), "y", shape);
  expect_close(download(rstd.t), want_rstd, 1e-5, "rstd", {rows});
  y.expect_guards_intact("y");
  rstd.expect_guards_intact("rstd");
}

TEST_P(NormForward, LayerNormMatchesReference) {
  auto [rows, cols, xt, wt] = GetParam();
  const Shape shape{rows, cols};
  auto x0 = test::rounded(test::random_values(size_t(rows) * cols, 300 + rows * 7 + cols), xt);
  auto w0 = test::rounded(test::random_values(cols, 400 + cols, 2.0f), wt);
  auto b0 = test::rounded(test::random_values(cols, 500 + cols), wt);
  auto x = test::tensor_from(dev(), shape, xt, x0);
  auto w = test::tensor_from(dev(), {cols}, wt, w0);
  auto b = test::tensor_from(dev(), {cols}, wt, b0);
  auto y = test::poisoned(dev(), shape, xt);
  auto mean = test::poisoned(dev(), {rows}, DType::f32);
  auto rstd = test::poisoned(dev(), {rows}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::layer_norm_forward(rec, y.t, mean.t, rstd.t, x, w, b, kLayerEps); });

  auto want_y = zeros(x0.size()), want_mean = zeros(rows), want_rstd = zeros(rows);
  ops::ref::layer_norm_forward(want_y, want_mean, want_rstd, x0, w0, b0, kLayerEps);
  expect_close(download(y.t), test::rounded(want_y, xt), forward_tol(xt), "y", shape);
  expect_close(download(mean.t), want_mean, 1e-5, "mean", {rows});
  expect_close(download(rstd.t), want_rstd, 1e-5, "rstd", {rows});
  y.expect_guards_intact("y");
  mean.expect_guards_intact("mean");
  rstd.expect_guards_intact("rstd");
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormForward,
                         ::testing::Combine(::testing::Values(1u, 3u, 17u),
                                            ::testing::Values(1u, 7u, 33u, 129u, 896u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         forward_name);

// Backward: rows x cols, weight dtype (dy, x, dx and the weight gradients are f32).
using BackwardCase = std::tuple<uint32_t, uint32_t, DType>;
std::string backward_name(const ::testing::TestParamInfo<BackwardCase>& info) {
  auto [rows, cols, wt] = info.param;
  return "r" + std::to_string(rows) + "_c" + std::to_string(cols) + "_w" + dtype_name(wt);
}

class NormBackward : public test::GpuTest, public ::testing::WithParamInterface<BackwardCase> {};

TEST_P(NormBackward, RmsNormMatchesReference) {
  auto [rows, cols, wt] = GetParam();
  const Shape shape{rows, cols};
  const size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 600 + rows * 7 + cols);
  auto dy0 = test::random_values(n, 700 + rows * 7 + cols);
  auto w0 = test::rounded(test::random_values(cols, 800 + cols, 2.0f), wt);
  auto dw0 = test::random_values(cols, 900 + cols);  // dw accumulates onto this
  auto y0 = zeros(n), rstd0 = zeros(rows);
  ops::ref::rms_norm_forward(y0, rstd0, x0, w0, kRmsEps);

  auto x = test::tensor_from(dev(), shape, DType::f32, x0);
  auto dy = test::tensor_from(dev(), shape, DType::f32, dy0);
  auto w = test::tensor_from(dev(), {cols}, wt, w0);
  auto rstd = test::tensor_from(dev(), {rows}, DType::f32, rstd0);
  auto dw = test::tensor_from(dev(), {cols}, DType::f32, dw0);
  auto dx = test::poisoned(dev(), shape, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::rms_norm_backward(rec, dx.t, dw, dy, x, w, rstd); });

  auto want_dx = zeros(n), want_dw = dw0;
  ops::ref::rms_norm_backward(want_dx, want_dw, dy0, x0, w0, rstd0);
  // The sizes of dx's two terms, rstd*w*dy and rstd^3*mean(w*dy*x)*x.
  std::vector<float> terms(n);
  for (uint32_t r = 0; r < rows; ++r) {
    double s = rstd0[r], mean_gx = 0;
    for (uint32_t c = 0; c < cols; ++c) mean_gx += double(w0[c]) * dy0[r * cols + c] * x0[r * cols + c] / cols;
    for (uint32_t c = 0; c < cols; ++c) {
      size_t i = size_t(r) * cols + c;
      terms[i] = float(std::fabs(s * w0[c] * dy0[i]) + std::fabs(s * s * s * mean_gx * x0[i]));
    }
  }
  expect_dx_close(download(dx.t), want_dx, terms, kBackwardTol, shape);
  expect_close(download(dw), want_dw, kBackwardTol, "dw", {cols});
  dx.expect_guards_intact("dx");
}

TEST_P(NormBackward, LayerNormMatchesReference) {
  auto [rows, cols, wt] = GetParam();
  const Shape shape{rows, cols};
  const size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 1000 + rows * 7 + cols);
  auto dy0 = test::random_values(n, 1100 + rows * 7 + cols);
  auto w0 = test::rounded(test::random_values(cols, 1200 + cols, 2.0f), wt);
  auto b0 = test::rounded(test::random_values(cols, 1300 + cols), wt);
  auto dw0 = test::random_values(cols, 1400 + cols), db0 = test::random_values(cols, 1500 + cols);
  auto y0 = zeros(n), mean0 = zeros(rows), rstd0 = zeros(rows);
  ops::ref::layer_norm_forward(y0, mean0, rstd0, x0, w0, b0, kLayerEps);

  auto x = test::tensor_from(dev(), shape, DType::f32, x0);
  auto dy = test::tensor_from(dev(), shape, DType::f32, dy0);
  auto w = test::tensor_from(dev(), {cols}, wt, w0);
  auto mean = test::tensor_from(dev(), {rows}, DType::f32, mean0);
  auto rstd = test::tensor_from(dev(), {rows}, DType::f32, rstd0);
  auto dw = test::tensor_from(dev(), {cols}, DType::f32, dw0);
  auto db = test::tensor_from(dev(), {cols}, DType::f32, db0);
  auto dx = test::poisoned(dev(), shape, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::layer_norm_backward(rec, dx.t, dw, db, dy, x, w, mean, rstd); });

  auto want_dx = zeros(n), want_dw = dw0, want_db = db0;
  ops::ref::layer_norm_backward(want_dx, want_dw, want_db, dy0, x0, w0, mean0, rstd0);
  // The sizes of dx's terms rstd*(w*dy - mean(w*dy) - xhat*mean(w*dy*xhat)): with one column they
  // cancel to exactly 0, and f32 on a GPU that fuses differently leaves rstd*|w*dy|*eps behind.
  std::vector<float> terms(n);
  for (uint32_t r = 0; r < rows; ++r) {
    double s = rstd0[r], mean_g = 0;
    for (uint32_t c = 0; c < cols; ++c) mean_g += std::fabs(double(w0[c]) * dy0[r * cols + c]) / cols;
    for (uint32_t c = 0; c < cols; ++c) {
      size_t i = size_t(r) * cols + c;
      double xhat = (x0[i] - mean0[r]) * s;
      terms[i] = float(s * (std::fabs(double(w0[c]) * dy0[i]) + mean_g * (1 + std::fabs(xhat))));
    }
  }
  expect_dx_close(download(dx.t), want_dx, terms, kBackwardTol, shape);
  expect_close(download(dw), want_dw, kBackwardTol, "dw", {cols});
  expect_close(download(db), want_db, kBackwardTol, "db", {cols});
  dx.expect_guards_intact("dx");
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormBackward,
                         ::testing::Combine(::testing::Values(1u, 3u, 17u),
                                            ::testing::Values(1u, 7u, 33u, 129u, 896u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         backward_name);

class NormTest : public test::GpuTest {};

// Frozen norm weights: without dw only dx is computed (one dispatch), and it is the same dx.
TEST_F(NormTest, RmsNormBackwardWithoutDw) {
  const uint32_t rows = 5, cols = 96;
  const size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 1), dy0 = test::random_values(n, 2);
  auto w0 = test::rounded(test::random_values(cols, 3), DType::bf16);
  auto y0 = zeros(n), rstd0 = zeros(rows);
  ops::ref::rms_norm_forward(y0, rstd0, x0, w0, kRmsEps);
  auto x = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
  auto dy = test::tensor_from(dev(), {rows, cols}, DType::f32, dy0);
  auto w = test::tensor_from(dev(), {cols}, DType::bf16, w0);
  auto rstd = test::tensor_from(dev(), {rows}, DType::f32, rstd0);
  auto dx = test::poisoned(dev(), {rows, cols}, DType::f32);
  vk::Recorder rec(dev());
  ops::rms_norm_backward(rec, dx.t, Tensor(), dy, x, w, rstd);
  auto program = rec.finish();
  EXPECT_EQ(program.dispatch_count(), 1u);
  program.run();
  auto want_dx = zeros(n);
  ops::ref::rms_norm_backward(want_dx, {}, dy0, x0, w0, rstd0);
  expect_close(download(dx.t), want_dx, kBackwardTol, "dx", {rows, cols});
  dx.expect_guards_intact("dx");
}

// accumulate: dx += the gradient (the residual stream's gradient takes the norm's in one dispatch, layer.cpp).
TEST_F(NormTest, RmsNormBackwardAccumulatesIntoDx) {
  const uint32_t rows = 7, cols = 200;
  const size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 11), dy0 = test::random_values(n, 12), dx0 = test::random_values(n, 13);
  auto w0 = test::rounded(test::random_values(cols, 14), DType::bf16);
  auto y0 = zeros(n), rstd0 = zeros(rows);
  ops::ref::rms_norm_forward(y0, rstd0, x0, w0, kRmsEps);
  auto x = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
  auto dy = test::tensor_from(dev(), {rows, cols}, DType::f32, dy0);
  auto w = test::tensor_from(dev(), {cols}, DType::bf16, w0);
  auto rstd = test::tensor_from(dev(), {rows}, DType::f32, rstd0);
  auto dx = test::tensor_from(dev(), {rows, cols}, DType::f32, dx0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::rms_norm_backward(rec, dx, Tensor(), dy, x, w, rstd, true); });
  auto want = zeros(n);
  ops::ref::rms_norm_backward(want, {}, dy0, x0, w0, rstd0);
  for (size_t i = 0; i < n; ++i) want[i] += dx0[i];
  expect_close(download(dx), want, kBackwardTol, "dx", {rows, cols});
}

// The gradient in two parts (gate_proj's and up_proj's dx products side by side, layer.cpp): dx += the norm's
// gradient of dy + dy2. With the f16 copy asked for, devices whose products read f16 (coopmat2) also get dx as f16,
// remembered for the next product (ops::remember_f16_copy); elsewhere nothing more is written.
TEST_F(NormTest, RmsNormBackwardAddsTwoGradientPartsAndLeavesAnF16Copy) {
  const uint32_t rows = 9, cols = 136;
  const size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 21), dy0 = test::random_values(n, 22), dy20 = test::random_values(n, 23);
  auto dx0 = test::random_values(n, 24);
  auto w0 = test::rounded(test::random_values(cols, 25), DType::bf16);
  auto y0 = zeros(n), rstd0 = zeros(rows);
  ops::ref::rms_norm_forward(y0, rstd0, x0, w0, kRmsEps);
  auto x = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
  auto dy = test::tensor_from(dev(), {rows, cols}, DType::f32, dy0);
  auto dy2 = test::tensor_from(dev(), {rows, cols}, DType::f32, dy20);
  auto w = test::tensor_from(dev(), {cols}, DType::bf16, w0);
  auto rstd = test::tensor_from(dev(), {rows}, DType::f32, rstd0);
  auto dx = test::tensor_from(dev(), {rows, cols}, DType::f32, dx0);
  std::shared_ptr<vk::Allocation> copy;
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::rms_norm_backward(rec, dx, dy, x, w, rstd, true, {.dy2 = dy2, .f16_copy = true});
    copy = rec.find_copy(dx.range(), n);
  });
  std::vector<float> dy_sum(n), want(n, 0.0f);
  for (size_t i = 0; i < n; ++i) dy_sum[i] = dy0[i] + dy20[i];
  ops::ref::rms_norm_backward(want, {}, dy_sum, x0, w0, rstd0);
  for (size_t i = 0; i < n; ++i) want[i] += dx0[i];
  const std::vector<float> got = download(dx);
  expect_close(got, want, kBackwardTol, "dx", {rows, cols});
  EXPECT_EQ(copy != nullptr, ops::cm2_products(dev())) << "an f16 copy exactly where the products read f16";
  if (copy)
    expect_close(download(Tensor::view(dev(), copy, {rows, cols}, DType::f16)), test::rounded(got, DType::f16), 0.0,
                 "dx's f16 copy", {rows, cols});
  // dy2 of another shape is refused, naming it.
  auto bad = test::tensor_from(dev(), {rows, cols - 8}, DType::f32, std::vector<float>(n - rows * 8, 1.0f));
  vk::Recorder rec(dev());
  EXPECT_THROW(ops::rms_norm_backward(rec, dx, dy, x, w, rstd, true, {.dy2 = bad}), Error);
}

// The residual add and the norm in one pass (model/layer.cpp: x_mid = x_in + o, then its norm): x = a + b in f32
// as add_forward sums, y (f32, or f16 for the products) and rstd as the norm of that x. The f32 residual stream only.
// With a copy (training: x_out's starting value, which the down product adds into), the same sums twice.
TEST_F(NormTest, RmsNormOfResidualAddMatchesReference) {
  for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{1, 1}, {3, 7}, {5, 896}, {2, 1000}})
    for (DType yt : {DType::f32, DType::f16})
      for (DType wt : {DType::f32, DType::bf16})
      for (bool with_copy : {false, true}) {
        const Shape shape{rows, cols};
        const std::string what = shape_string(shape) + " y " + dtype_name(yt) + " w " + dtype_name(wt) +
                                 (with_copy ? " with a copy" : "") + ": ";
        auto a0 = test::random_values(size_t(rows) * cols, 600 + rows * 7 + cols);
        auto b0 = test::random_values(size_t(rows) * cols, 700 + rows * 7 + cols);
        auto w0 = test::rounded(test::random_values(cols, 800 + cols, 2.0f), wt);
        std::vector<float> x0(a0.size());
        for (size_t i = 0; i < x0.size(); ++i) x0[i] = a0[i] + b0[i];
        auto a = test::tensor_from(dev(), shape, DType::f32, a0);
        auto b = test::tensor_from(dev(), shape, DType::f32, b0);
        auto w = test::tensor_from(dev(), {cols}, wt, w0);
        auto x = test::poisoned(dev(), shape, DType::f32);
        auto y = test::poisoned(dev(), shape, yt);
        auto rstd = test::poisoned(dev(), {rows}, DType::f32);
        auto copy = test::poisoned(dev(), shape, DType::f32);
        test::run(dev(), [&](vk::Recorder& rec) {
          ops::rms_norm_forward_add(rec, y.t, rstd.t, x.t, a, b, w, kRmsEps, with_copy ? copy.t : Tensor());
        });
        auto want_y = zeros(x0.size()), want_rstd = zeros(rows);
        ops::ref::rms_norm_forward(want_y, want_rstd, x0, w0, kRmsEps);
        expect_close(download(x.t), x0, 0.0, what + "x = a + b", shape);
        expect_close(download(y.t), test::rounded(want_y, yt), forward_tol(yt), what + "y", shape);
        expect_close(download(rstd.t), want_rstd, 1e-5, what + "rstd", {rows});
        x.expect_guards_intact("x");
        y.expect_guards_intact("y");
        rstd.expect_guards_intact("rstd");
        if (with_copy) {
          expect_close(download(copy.t), x0, 0.0, what + "the copy", shape);
          copy.expect_guards_intact("copy");
        }
      }
  auto a = test::tensor_from(dev(), {2, 8}, DType::f32, std::vector<float>(16, 1.0f));
  auto a16 = test::tensor_from(dev(), {2, 8}, DType::f16, std::vector<float>(16, 1.0f));
  auto w = test::tensor_from(dev(), {8}, DType::f32, std::vector<float>(8, 1.0f));
  auto r = test::tensor_from(dev(), {2}, DType::f32, std::vector<float>(2, 1.0f));
  auto short_b = test::tensor_from(dev(), {2, 7}, DType::f32, std::vector<float>(14, 1.0f));
  vk::Recorder rec(dev());
  EXPECT_THROW(ops::rms_norm_forward_add(rec, a, r, a, a, short_b, w, kRmsEps), Error) << "b of another shape";
  EXPECT_THROW(ops::rms_norm_forward_add(rec, a16, r, a16, a16, a16, w, kRmsEps), Error) << "an f16 residual stream";
  EXPECT_THROW(ops::rms_norm_forward_add(rec, a, r, a, a, a, w, kRmsEps, short_b), Error) << "a copy of another shape";
  EXPECT_THROW(ops::rms_norm_forward_add(rec, a, r, a, a, a, w, kRmsEps, a16), Error) << "an f16 copy";
}

// A split product's partial sums read in place of its output (ops::SplitSums): b of the residual add, dy and dy2 of
// the backward added up slice by slice in order, as the product's reduce would, so the results are the bits the same
// op gives from the reduced tensors. The tensors they stand for are poisoned (NaN): never read.
TEST_F(NormTest, SplitSumsGiveTheBitsOfTheirReducedTensors) {
  for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{3, 7}, {5, 896}, {2, 4100}})
    for (DType yt : {DType::f32, DType::f16}) {
      const Shape shape{rows, cols};
      const size_t n = size_t(rows) * cols;
      const std::string what = shape_string(shape) + " y " + dtype_name(yt) + ": ";
      // b: 3 slices in one lane; dy: 2 in 2 lanes; dy2: 5 in 4 lanes; and what their reduces would write
      // (shaders/matmul_splitk_reduce.comp: each lane's slices in order, then the lanes in a tree)
      auto sum_of = [&](const std::vector<float>& parts, uint32_t slices, uint32_t lanes) {
        std::vector<float> sum(n);
        for (size_t i = 0; i < n; ++i) {
          std::vector<float> lane(lanes, 0.0f);
          for (uint32_t l = 0; l < lanes; ++l)
            for (uint32_t s = l; s < slices; s += lanes) lane[l] += parts[s * n + i];
          for (uint32_t h = lanes / 2; h > 0; h /= 2)
            for (uint32_t l = 0; l < h; ++l) lane[l] += lane[l + h];
          sum[i] = lane[0];
        }
        return sum;
      };
      const auto b_parts = test::random_values(3 * n, 910 + cols), dy_parts = test::random_values(2 * n, 920 + cols),
                 dy2_parts = test::random_values(5 * n, 930 + cols);
      const ops::SplitSums b_sums{.partial = test::tensor_from(dev(), {3 * rows, cols}, DType::f32, b_parts), .splits = 3},
          dy_sums{.partial = test::tensor_from(dev(), {2 * rows, cols}, DType::f32, dy_parts), .splits = 2, .lanes = 2},
          dy2_sums{.partial = test::tensor_from(dev(), {5 * rows, cols}, DType::f32, dy2_parts), .splits = 5, .lanes = 4};
      auto a = test::tensor_from(dev(), shape, DType::f32, test::random_values(n, 940 + cols));
      auto w = test::tensor_from(dev(), {cols}, DType::bf16, test::rounded(test::random_values(cols, 950, 2.0f), DType::bf16));
      auto b = test::tensor_from(dev(), shape, DType::f32, sum_of(b_parts, 3, 1));
      auto unread = test::poisoned(dev(), shape, DType::f32);
      // forward: from the sums and from the reduced b
      auto x1 = test::poisoned(dev(), shape, DType::f32), x2 = test::poisoned(dev(), shape, DType::f32);
      auto y1 = test::poisoned(dev(), shape, yt), y2 = test::poisoned(dev(), shape, yt);
      auto r1 = test::poisoned(dev(), {rows}, DType::f32), r2 = test::poisoned(dev(), {rows}, DType::f32);
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::rms_norm_forward_add(rec, y1.t, r1.t, x1.t, a, unread.t, w, kRmsEps, Tensor(), b_sums);
        ops::rms_norm_forward_add(rec, y2.t, r2.t, x2.t, a, b, w, kRmsEps);
      });
      EXPECT_EQ(download(x1.t), download(x2.t)) << what << "x";
      EXPECT_EQ(download(y1.t), download(y2.t)) << what << "y";
      EXPECT_EQ(download(r1.t), download(r2.t)) << what << "rstd";
      for (auto* g : {&x1, &y1, &r1, &unread}) g->expect_guards_intact("forward");
      // backward, accumulating into dx: dy and dy2 both from sums, and from the reduced tensors
      auto dy = test::tensor_from(dev(), shape, DType::f32, sum_of(dy_parts, 2, 2));
      auto dy2 = test::tensor_from(dev(), shape, DType::f32, sum_of(dy2_parts, 5, 4));
      const auto dx0 = test::random_values(n, 960 + cols);
      auto dx1 = test::tensor_from(dev(), shape, DType::f32, dx0), dx2 = test::tensor_from(dev(), shape, DType::f32, dx0);
      auto unread2 = test::poisoned(dev(), shape, DType::f32);
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::rms_norm_backward(rec, dx1, unread.t, x2.t, w, r2.t, true,
                               {.dy2 = unread2.t, .dy_sums = dy_sums, .dy2_sums = dy2_sums});
        ops::rms_norm_backward(rec, dx2, dy, x2.t, w, r2.t, true, {.dy2 = dy2});
      });
      EXPECT_EQ(download(dx1), download(dx2)) << what << "dx";
      // dy alone from sums
      auto dx3 = test::tensor_from(dev(), shape, DType::f32, dx0), dx4 = test::tensor_from(dev(), shape, DType::f32, dx0);
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::rms_norm_backward(rec, dx3, unread.t, x2.t, w, r2.t, false, {.dy_sums = dy_sums});
        ops::rms_norm_backward(rec, dx4, dy, x2.t, w, r2.t, false, {});
      });
      EXPECT_EQ(download(dx3), download(dx4)) << what << "dx from dy's sums alone";
      unread2.expect_guards_intact("dy2");
    }
  // Partial sums of another shape, or for dy2 without dy2, are refused, naming them.
  auto a = test::tensor_from(dev(), {2, 8}, DType::f32, std::vector<float>(16, 1.0f));
  auto w = test::tensor_from(dev(), {8}, DType::f32, std::vector<float>(8, 1.0f));
  auto r = test::tensor_from(dev(), {2}, DType::f32, std::vector<float>(2, 1.0f));
  const ops::SplitSums short_sums{.partial = test::tensor_from(dev(), {5, 8}, DType::f32, std::vector<float>(40, 1.0f)),
                                  .splits = 3};
  vk::Recorder rec(dev());
  test::expect_error_naming([&] { ops::rms_norm_forward_add(rec, a, r, a, a, a, w, kRmsEps, Tensor(), short_sums); },
                            "b's partial sums");
  test::expect_error_naming([&] { ops::rms_norm_backward(rec, a, a, a, w, r, false, {.dy_sums = short_sums}); },
                            "dy's partial sums");
  const ops::SplitSums sums{.partial = test::tensor_from(dev(), {6, 8}, DType::f32, std::vector<float>(48, 1.0f)),
                            .splits = 3};
  test::expect_error_naming([&] { ops::rms_norm_backward(rec, a, a, a, w, r, false, {.dy2_sums = sums}); },
                            "without dy2");
}

// More rows than workgroups one dimension allows (65535): the kernels' grid-stride loop over rows, and
// a [B, T, C] input whose saved statistics are [B, T].
// The residual stream (f32) normalised straight into f16 matmul inputs: the f32 result rounded once.
TEST_F(NormTest, RmsNormF32IntoF16) {
  for (DType wt : {DType::f32, DType::f16, DType::bf16}) {
    for (uint32_t cols : {7u, 896u}) {
      const uint32_t rows = 5;
      auto x0 = test::random_values(size_t(rows) * cols, 11 + cols, 3.0f);
      auto w0 = test::rounded(test::random_values(cols, 12 + cols, 2.0f), wt);
      auto x = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
      auto w = test::tensor_from(dev(), {cols}, wt, w0);
      auto y = test::poisoned(dev(), {rows, cols}, DType::f16);
      auto rstd = test::poisoned(dev(), {rows}, DType::f32);
      test::run(dev(), [&](vk::Recorder& rec) { ops::rms_norm_forward(rec, y.t, rstd.t, x, w, kRmsEps); });
      auto want_y = zeros(x0.size()), want_rstd = zeros(rows);
      ops::ref::rms_norm_forward(want_y, want_rstd, x0, w0, kRmsEps);
      expect_close(download(y.t), test::rounded(want_y, DType::f16), 2e-3, "y f16", {rows, cols});
      expect_close(download(rstd.t), want_rstd, 1e-5, "rstd", {rows});
      y.expect_guards_intact("y");
    }
  }
}

TEST_F(NormTest, RmsNormManyRows) {
  const uint32_t batch = 2, seq = 33000, cols = 4;
  const size_t n = size_t(batch) * seq * cols;
  auto x0 = test::random_values(n, 4), w0 = test::random_values(cols, 5);
  auto x = test::tensor_from(dev(), {batch, seq, cols}, DType::f32, x0);
  auto w = test::tensor_from(dev(), {cols}, DType::f32, w0);
  auto y = test::poisoned(dev(), {batch, seq, cols}, DType::f32);
  auto rstd = test::poisoned(dev(), {batch, seq}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::rms_norm_forward(rec, y.t, rstd.t, x, w, kRmsEps); });
  auto want_y = zeros(n), want_rstd = zeros(size_t(batch) * seq);
  ops::ref::rms_norm_forward(want_y, want_rstd, x0, w0, kRmsEps);
  expect_close(download(y.t), want_y, 1e-5, "y", {batch, seq, cols});
  expect_close(download(rstd.t), want_rstd, 1e-5, "rstd", {batch, seq});
  y.expect_guards_intact("y");
  rstd.expect_guards_intact("rstd");
}

// ---- The reference backward against central differences of the reference forward, in double ----

// Gradient of L(v) = sum(dy * y(v)) by central differences, for each element of v.
std::vector<float> finite_diff(std::vector<double>& v, const std::function<double()>& loss) {
  const double h = 1e-5;
  std::vector<float> grad(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = loss();
    v[i] = saved - h;
    const double down = loss();
    v[i] = saved;
    grad[i] = float((up - down) / (2 * h));
  }
  return grad;
}

std::vector<double> random_doubles(size_t n, uint32_t seed, float scale = 1.0f) {
  auto f = test::random_values(n, seed, scale);
  return {f.begin(), f.end()};
}
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A larger eps than the models use, so its part of the gradient (all of it when C = 1) is well above
// the differences' rounding.
constexpr double kFiniteDiffEps = 1e-3;
class NormFiniteDiff : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

TEST_P(NormFiniteDiff, RmsNormReferenceBackward) {
  auto [rows, cols] = GetParam();
  const size_t n = size_t(rows) * cols;
  auto x = random_doubles(n, 11), w = random_doubles(cols, 12, 2.0f), dy = random_doubles(n, 13);
  std::vector<double> y(n), rstd(rows);
  auto loss = [&] {
    ops::ref::rms_norm_forward(y, rstd, x, w, kFiniteDiffEps);
    return dot(dy, y);
  };
  auto fd_dx = finite_diff(x, loss), fd_dw = finite_diff(w, loss);
  loss();  // rstd for the unperturbed x
  std::vector<double> dx(n), dw(cols, 0.0);
  ops::ref::rms_norm_backward(dx, dw, dy, x, w, rstd);
  expect_close(to_float(dx), fd_dx, kFiniteDiffTol, "fd_dx", {rows, cols});
  expect_close(to_float(dw), fd_dw, kFiniteDiffTol, "fd_dw", {cols});
}

TEST_P(NormFiniteDiff, LayerNormReferenceBackward) {
  auto [rows, cols] = GetParam();
  const size_t n = size_t(rows) * cols;
  auto x = random_doubles(n, 21), w = random_doubles(cols, 22, 2.0f), b = random_doubles(cols, 23);
  auto dy = random_doubles(n, 24);
  std::vector<double> y(n), mean(rows), rstd(rows);
  auto loss = [&] {
    ops::ref::layer_norm_forward(y, mean, rstd, x, w, b, kFiniteDiffEps);
    return dot(dy, y);
  };
  auto fd_dx = finite_diff(x, loss), fd_dw = finite_diff(w, loss), fd_db = finite_diff(b, loss);
  loss();
  std::vector<double> dx(n), dw(cols, 0.0), db(cols, 0.0);
  ops::ref::layer_norm_backward(dx, dw, db, dy, x, w, mean, rstd);
  expect_close(to_float(dx), fd_dx, kFiniteDiffTol, "fd_dx", {rows, cols});
  expect_close(to_float(dw), fd_dw, kFiniteDiffTol, "fd_dw", {cols});
  expect_close(to_float(db), fd_db, kFiniteDiffTol, "fd_db", {cols});
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormFiniteDiff,
                         ::testing::Values(std::pair{1u, 1u}, std::pair{3u, 1u}, std::pair{3u, 7u},
                                           std::pair{2u, 33u}));

// ---- Bad inputs: ls::Error naming the op ----

void expect_error(const std::function<void()>& call, const std::string& op) {
  try {
    call();
    ADD_FAILURE() << op << ": no error was raised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << "message does not name " << op << ": " << e.what();
  }
}

TEST_F(NormTest, BadInputsRaiseErrorsNamingTheOp) {
  auto t = [&](Shape s, DType d) { return Tensor::empty(dev(), std::move(s), d); };
  auto x = t({3, 8}, DType::f32), y = t({3, 8}, DType::f32), w = t({8}, DType::bf16), b = t({8}, DType::bf16);
  auto rstd = t({3}, DType::f32), mean = t({3}, DType::f32), dw = t({8}, DType::f32), db = t({8}, DType::f32);
  vk::Recorder rec(dev());
  const std::string fwd = "rms_norm_forward", bwd = "rms_norm_backward";
  const std::string ln_fwd = "layer_norm_forward", ln_bwd = "layer_norm_backward";
  // Wrong shapes.
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, x, t({7}, DType::bf16), 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, t({3, 9}, DType::f32), rstd, x, w, 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, y, t({4}, DType::f32), x, w, 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_backward(rec, y, t({9}, DType::f32), x, x, w, rstd); }, bwd);
  expect_error([&] { ops::rms_norm_backward(rec, y, dw, t({8, 3}, DType::f32), x, w, rstd); }, bwd);
  expect_error([&] { ops::layer_norm_forward(rec, y, mean, rstd, x, w, t({4}, DType::bf16), 1e-5f); }, ln_fwd);
  // Wrong dtypes.
  auto x_bf16 = t({3, 8}, DType::bf16);
  expect_error([&] { ops::rms_norm_forward(rec, x_bf16, rstd, x_bf16, w, 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, t({3, 8}, DType::f16), w, 1e-6f); }, fwd);  // f16 x into f32 y
  expect_error([&] { ops::rms_norm_forward(rec, y, t({3}, DType::f16), x, w, 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, x, t({8}, DType::i32), 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_backward(rec, y, dw, x, t({3, 8}, DType::f16), w, rstd); }, bwd);
  expect_error([&] { ops::layer_norm_forward(rec, y, mean, rstd, x, w, t({8}, DType::f32), 1e-5f); }, ln_fwd);
  expect_error([&] { ops::layer_norm_backward(rec, y, dw, t({8}, DType::bf16), x, x, w, mean, rstd); }, ln_bwd);
  // Empty tensors and other bad parameters.
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, Tensor(), w, 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, x, Tensor(), 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_backward(rec, y, dw, x, x, w, Tensor()); }, bwd);
  expect_error([&] { ops::layer_norm_forward(rec, y, Tensor(), rstd, x, w, b, 1e-5f); }, ln_fwd);
  expect_error([&] { ops::layer_norm_backward(rec, y, dw, Tensor(), x, x, w, mean, rstd); }, ln_bwd);
  auto no_cols = t({3, 0}, DType::f32);
  expect_error([&] { ops::rms_norm_forward(rec, no_cols, rstd, no_cols, t({0}, DType::f32), 1e-6f); }, fwd);
  expect_error([&] { ops::rms_norm_forward(rec, y, rstd, x, w, -1.0f); }, fwd);
  EXPECT_EQ(rec.finish().dispatch_count(), 0u);
}

}  // namespace
}  // namespace ls
