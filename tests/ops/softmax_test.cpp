// softmax_forward / softmax_backward against the CPU reference (computed in double from the same
// rounded inputs, then rounded to the storage type). Tolerance (rel, test::expect_close): f32 1e-5,
// f16 2e-3, bf16 1e-2 (the output is rounded once to the storage type). Causal-masked entries must be
// exactly 0 in y and dx. The reference backward is checked by central finite differences of the
// reference forward in double (L = sum(dy * y(x)), h = 1e-6, rel 1e-7).
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "ops/softmax.h"
#include "support/testing.h"

namespace ls {

// Test names and failure messages show "f16" rather than a byte dump.
static void PrintTo(DType d, std::ostream* os) { *os << dtype_name(d); }

namespace {

double tol(DType t) { return t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2; }

std::vector<double> widen(std::span<const float> v) { return {v.begin(), v.end()}; }
std::vector<float> narrow(std::span<const double> v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
  return out;
}

// The reference y for (already rounded) x, rounded to the storage type as the GPU stores it.
std::vector<float> ref_forward(std::span<const float> x, uint32_t cols, float scale, uint32_t seq, int32_t offset,
                               DType dtype) {
  auto xd = widen(x);
  std::vector<double> yd(x.size());
  ops::ref::softmax_forward<double>(yd, xd, cols, scale, seq, offset);
  return test::rounded(narrow(yd), dtype);
}

std::vector<float> ref_backward(std::span<const float> dy, std::span<const float> y, uint32_t cols, float scale,
                                DType dtype) {
  auto dyd = widen(dy), yd = widen(y);
  std::vector<double> dxd(y.size());
  ops::ref::softmax_backward<double>(dxd, dyd, yd, cols, scale);
  return test::rounded(narrow(dxd), dtype);
}

// Records the worst relative error (to max |expected|) in the test's XML properties.
void record(const char* what, std::span<const float> actual, std::span<const float> expected) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", test::compare(actual, expected).max_rel);
  ::testing::Test::RecordProperty(what, text);
}

using test::expect_error_naming;

class SoftmaxShapes : public test::GpuTest,
                      public ::testing::WithParamInterface<std::tuple<uint32_t, uint32_t, DType>> {};

TEST_P(SoftmaxShapes, ForwardMatchesReference) {
  auto [rows, cols, dtype] = GetParam();
  const float scale = 0.75f;
  auto x0 = test::rounded(test::random_values(size_t(rows) * cols, 100 + cols + rows, 4.0f), dtype);
  auto x = test::tensor_from(dev(), {rows, cols}, dtype, x0);
  auto y = test::poisoned(dev(), {rows, cols}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::softmax_forward(rec, y.t, x, scale); });
  auto want = ref_forward(x0, cols, scale, 1, -1, dtype);
  auto got = download(y.t);
  test::expect_close(got, want, tol(dtype), "softmax_forward", {rows, cols});
  record("max_rel_y", got, want);
  y.expect_guards_intact("softmax_forward");
}

TEST_P(SoftmaxShapes, BackwardMatchesReference) {
  auto [rows, cols, dtype] = GetParam();
  const float scale = 0.75f;
  size_t n = size_t(rows) * cols;
  auto y0 = ref_forward(test::random_values(n, 200 + cols + rows, 4.0f), cols, scale, 1, -1, dtype);
  auto dy0 = test::rounded(test::random_values(n, 300 + cols + rows), dtype);
  auto y = test::tensor_from(dev(), {rows, cols}, dtype, y0);
  auto dy = test::tensor_from(dev(), {rows, cols}, dtype, dy0);
  auto dx = test::poisoned(dev(), {rows, cols}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::softmax_backward(rec, dx.t, dy, y, scale); });
  auto want = ref_backward(dy0, y0, cols, scale, dtype);
  auto got = download(dx.t);
  test::expect_close(got, want, tol(dtype), "softmax_backward", {rows, cols});
  record("max_rel_dx", got, want);
  dx.expect_guards_intact("softmax_backward");
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxShapes,
                         ::testing::Combine(::testing::Values(1u, 5u, 17u), ::testing::Values(1u, 7u, 33u, 129u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)));

// A vocabulary-sized row (Qwen2's 151936), forward and backward, two rows.
class SoftmaxLongRow : public test::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SoftmaxLongRow, ForwardAndBackwardMatchReference) {
  DType dtype = GetParam();
  const uint32_t rows = 2, cols = 151936;
  size_t n = size_t(rows) * cols;
  auto x0 = test::rounded(test::random_values(n, 7, 8.0f), dtype);
  auto dy0 = test::rounded(test::random_values(n, 8), dtype);
  auto x = test::tensor_from(dev(), {rows, cols}, dtype, x0);
  auto dy = test::tensor_from(dev(), {rows, cols}, dtype, dy0);
  auto y = test::poisoned(dev(), {rows, cols}, dtype);
  auto dx = test::poisoned(dev(), {rows, cols}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::softmax_forward(rec, y.t, x);
    ops::softmax_backward(rec, dx.t, dy, y.t);
  });
  auto want_y = ref_forward(x0, cols, 1.0f, 1, -1, dtype);
  auto got_y = download(y.t);
  test::expect_close(got_y, want_y, tol(dtype), "softmax_forward", {rows, cols});
  record("max_rel_y", got_y, want_y);
  // The backward from the GPU's own y, so it is checked alone.
  auto want_dx = ref_backward(dy0, got_y, cols, 1.0f, dtype);
  auto got_dx = download(dx.t);
  test::expect_close(got_dx, want_dx, tol(dtype), "softmax_backward", {rows, cols});
  record("max_rel_dx", got_dx, want_dx);
  y.expect_guards_intact("softmax_forward");
  dx.expect_guards_intact("softmax_backward");
}

INSTANTIATE_TEST_SUITE_P(Vocab, SoftmaxLongRow, ::testing::Values(DType::f32, DType::f16));

// Attention-style causal mask with a KV-cache offset: x [B=2, T=7, C], query t sees keys c <= t + offset.
class SoftmaxCausal : public test::GpuTest,
                      public ::testing::WithParamInterface<std::tuple<int32_t, uint32_t, DType>> {};

TEST_P(SoftmaxCausal, MasksFutureColumns) {
  auto [offset, cols, dtype] = GetParam();
  const uint32_t batch = 2, seq = 7;
  const float scale = 0.125f;
  size_t n = size_t(batch) * seq * cols;
  Shape shape{batch, seq, cols};
  auto x0 = test::rounded(test::random_values(n, 40 + cols + uint32_t(offset), 16.0f), dtype);
  auto dy0 = test::rounded(test::random_values(n, 50 + cols + uint32_t(offset)), dtype);
  auto x = test::tensor_from(dev(), shape, dtype, x0);
  auto dy = test::tensor_from(dev(), shape, dtype, dy0);
  auto y = test::poisoned(dev(), shape, dtype);
  auto dx = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&, offset = offset](vk::Recorder& rec) {
    ops::softmax_forward(rec, y.t, x, scale, offset);
    ops::softmax_backward(rec, dx.t, dy, y.t, scale);
  });
  auto want_y = ref_forward(x0, cols, scale, seq, offset, dtype);
  auto got_y = download(y.t);
  test::expect_close(got_y, want_y, tol(dtype), "softmax_forward causal", shape);
  record("max_rel_y", got_y, want_y);
  auto want_dx = ref_backward(dy0, got_y, cols, scale, dtype);
  auto got_dx = download(dx.t);
  test::expect_close(got_dx, want_dx, tol(dtype), "softmax_backward causal", shape);
  record("max_rel_dx", got_dx, want_dx);

  size_t masked = 0;
  for (size_t r = 0; r < size_t(batch) * seq; ++r)
    for (size_t c = 0; c < cols; ++c) {
      if (c <= r % seq + size_t(offset)) continue;
      ++masked;
      EXPECT_EQ(got_y[r * cols + c], 0.0f) << "y row " << r << " col " << c;
      EXPECT_EQ(got_dx[r * cols + c], 0.0f) << "dx row " << r << " col " << c;
    }
  EXPECT_GT(masked, 0u);
  y.expect_guards_intact("softmax_forward causal");
  dx.expect_guards_intact("softmax_backward causal");
}

// Columns C = T + offset (a KV cache of `offset` keys) and a wider C = 33.
INSTANTIATE_TEST_SUITE_P(Offsets, SoftmaxCausal,
                         ::testing::Values(std::tuple{0, 7u, DType::f32}, std::tuple{3, 10u, DType::f32},
                                           std::tuple{0, 33u, DType::f32}, std::tuple{3, 33u, DType::f32},
                                           std::tuple{3, 10u, DType::f16}, std::tuple{0, 33u, DType::bf16}));

class Softmax : public test::GpuTest {};

TEST_F(Softmax, InPlace) {
  const uint32_t rows = 5, cols = 129;
  size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 61, 4.0f);
  auto dy0 = test::random_values(n, 62);
  auto xy = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
  auto dydx = test::tensor_from(dev(), {rows, cols}, DType::f32, dy0);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::softmax_forward(rec, xy, xy, 2.0f);
    ops::softmax_backward(rec, dydx, dydx, xy, 2.0f);
  });
  auto want_y = ref_forward(x0, cols, 2.0f, 1, -1, DType::f32);
  auto got_y = download(xy);
  test::expect_close(got_y, want_y, 1e-5, "softmax_forward in place", {rows, cols});
  test::expect_close(download(dydx), ref_backward(dy0, got_y, cols, 2.0f, DType::f32), 1e-5,
                     "softmax_backward in place", {rows, cols});
}

// More rows than one dispatch dimension allows (65535): the row-stride loop takes the rest.
TEST_F(Softmax, MoreRowsThanWorkgroups) {
  const uint32_t rows = 70001, cols = 3;
  size_t n = size_t(rows) * cols;
  auto x0 = test::random_values(n, 71, 4.0f);
  auto x = test::tensor_from(dev(), {rows, cols}, DType::f32, x0);
  auto y = test::poisoned(dev(), {rows, cols}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::softmax_forward(rec, y.t, x); });
  test::expect_close(download(y.t), ref_forward(x0, cols, 1.0f, 1, -1, DType::f32), 1e-5, "softmax_forward", {rows, cols});
  y.expect_guards_intact("softmax_forward");
}

// The reference backward against central differences of the reference forward, in double.
void check_reference_gradient(uint32_t rows, uint32_t cols, double scale, uint32_t seq, int32_t offset) {
  size_t n = size_t(rows) * cols;
  auto x = widen(test::random_values(n, 81 + cols, 2.0f));
  auto dy = widen(test::random_values(n, 82 + cols));
  auto loss = [&](const std::vector<double>& xs) {
    std::vector<double> y(n);
    ops::ref::softmax_forward<double>(y, xs, cols, scale, seq, offset);
    double l = 0;
    for (size_t i = 0; i < n; ++i) l += dy[i] * y[i];
    return l;
  };
  std::vector<double> y(n), dx(n);
  ops::ref::softmax_forward<double>(y, x, cols, scale, seq, offset);
  ops::ref::softmax_backward<double>(dx, dy, y, cols, scale);
  const double h = 1e-6;
  for (size_t i = 0; i < n; ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    double fd = (loss(xp) - loss(xm)) / (2 * h);
    EXPECT_NEAR(dx[i], fd, 1e-7 * (1 + std::fabs(fd))) << "element " << i;
  }
}

TEST(SoftmaxReference, BackwardMatchesFiniteDifferences) { check_reference_gradient(3, 6, 0.8, 1, -1); }
TEST(SoftmaxReference, CausalBackwardMatchesFiniteDifferences) {
  check_reference_gradient(7, 9, 1.3, 7, 0);
  check_reference_gradient(7, 9, 0.5, 7, 2);
}

TEST_F(Softmax, BadInputsRaiseErrors) {
  auto x = Tensor::empty(dev(), {4, 8}, DType::f32);
  auto x3 = Tensor::empty(dev(), {2, 4, 8}, DType::f32);
  auto y = Tensor::empty(dev(), {4, 8}, DType::f32);
  auto y_wide = Tensor::empty(dev(), {4, 9}, DType::f32);
  auto y_f16 = Tensor::empty(dev(), {4, 8}, DType::f16);
  auto x_i32 = Tensor::empty(dev(), {4, 8}, DType::i32);
  auto x_1d = Tensor::empty(dev(), {8}, DType::f32);
  auto y_1d = Tensor::empty(dev(), {8}, DType::f32);
  vk::Recorder rec(dev());
  expect_error_naming([&] { ops::softmax_forward(rec, y_wide, x); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_forward(rec, y_f16, x); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_forward(rec, y, x_i32); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_forward(rec, y, Tensor{}); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_forward(rec, y, x3); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_forward(rec, y_1d, x_1d, 1.0f, 0); }, "softmax_forward");
  expect_error_naming([&] { ops::softmax_backward(rec, y, y_wide, x); }, "softmax_backward");
  expect_error_naming([&] { ops::softmax_backward(rec, y_f16, y, x); }, "softmax_backward");
  expect_error_naming([&] { ops::softmax_backward(rec, Tensor{}, y, x); }, "softmax_backward");
}

}  // namespace
}  // namespace ls
