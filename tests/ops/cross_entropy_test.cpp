// cross_entropy_forward / cross_entropy_backward / argmax_forward against the CPU reference (double,
// from the same rounded logits). Tolerance (rel, test::expect_close): lse, row_loss and f32 dlogits
// 1e-5 for every logits dtype (the kernels compute in f32 from the stored values; outputs are f32);
// dlogits stored as f16 2e-3, bf16 1e-2; loss[0] 1e-5 relative, loss[1] (the count) exact; argmax
// exact. The reference backward is checked by central finite differences of the reference loss in
// double (h = 1e-6, rel 1e-7). Targets: -100 and other negatives are ignored; a target >= V is ignored
// by the kernels (it must not be read out of bounds).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>

#include "ops/argmax.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "support/testing.h"

namespace ls {

// Test names and failure messages show "f16" rather than a byte dump.
static void PrintTo(DType d, std::ostream* os) { *os << dtype_name(d); }

namespace {

double store_tol(DType t) { return t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2; }

std::vector<double> widen(std::span<const float> v) { return {v.begin(), v.end()}; }
std::vector<float> narrow(std::span<const double> v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
  return out;
}

void record(const char* what, double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  ::testing::Test::RecordProperty(what, text);
}
void record(const char* what, std::span<const float> actual, std::span<const float> expected) {
  record(what, test::compare(actual, expected).max_rel);
}

using test::expect_error_naming;

bool counted(int32_t target, uint32_t vocab) { return target >= 0 && uint32_t(target) < vocab; }

// Targets in [0, V) with every third row ignored (-100; one row -1), and, with enough rows, one
// target == V (out of range: ignored by the kernels too).
std::vector<int32_t> make_targets(uint32_t rows, uint32_t vocab, uint32_t seed) {
  auto t = test::random_ints(rows, seed, 0, int32_t(vocab) - 1);
  for (uint32_t r = 1; r < rows; r += 3) t[r] = -100;
  if (rows > 4) t[4] = -1;
  if (rows > 6) t[6] = int32_t(vocab);
  return t;
}

struct Reference {
  std::vector<double> loss = std::vector<double>(2), row_loss, lse, dlogits;
};
Reference reference(std::span<const float> logits, std::span<const int32_t> targets, uint32_t vocab, double dloss_scale) {
  Reference r;
  size_t rows = targets.size();
  r.row_loss.resize(rows);
  r.lse.resize(rows);
  r.dlogits.resize(logits.size());
  auto ld = widen(logits);
  ops::ref::cross_entropy_forward<double>(r.loss, r.row_loss, r.lse, ld, targets, vocab);
  ops::ref::cross_entropy_backward<double>(r.dlogits, ld, targets, r.lse, r.loss, vocab, dloss_scale);
  return r;
}

// Runs forward then backward on the GPU and compares everything with the reference.
// The loss over `logits` and its gradient written over them, in one recording (dloss_scale 0.5). cap > 0: the
// backward's softcap factor, with the logits capped in place first when cap_first (else taken as capped already).
// Returns the loss.
float forward_backward_in_place(vk::Device& dev, const Tensor& logits, std::span<const int32_t> targets0, float cap = 0,
                                bool cap_first = false) {
  const uint32_t rows = uint32_t(targets0.size());
  auto targets = test::tensor_from_ints(dev, {rows}, targets0);
  auto loss = Tensor::empty(dev, {2}, DType::f32);
  auto row_loss = Tensor::empty(dev, {rows}, DType::f32);
  auto lse = Tensor::empty(dev, {rows}, DType::f32);
  test::run(dev, [&](vk::Recorder& rec) {
    if (cap_first) ops::softcap_forward(rec, logits, logits, cap);
    ops::cross_entropy_forward(rec, loss, row_loss, lse, logits, targets);
    ops::cross_entropy_backward(rec, logits, logits, targets, lse, loss, 0.5f, cap);
  });
  return download(loss)[0];
}

void check_forward_backward(vk::Device& dev, uint32_t rows, uint32_t vocab, DType dtype, DType grad_dtype,
                            std::span<const int32_t> targets0, float logit_scale, uint32_t seed) {
  const float dloss_scale = 1.5f;
  auto logits0 = test::rounded(test::random_values(size_t(rows) * vocab, seed, logit_scale), dtype);
  auto logits = test::tensor_from(dev, {rows, vocab}, dtype, logits0);
  auto targets = test::tensor_from_ints(dev, {rows}, targets0);
  auto loss = test::poisoned(dev, {2}, DType::f32);
  auto row_loss = test::poisoned(dev, {rows}, DType::f32);
  auto lse = test::poisoned(dev, {rows}, DType::f32);
  auto dlogits = test::poisoned(dev, {rows, vocab}, grad_dtype);
  test::run(dev, [&](vk::Recorder& rec) {
    ops::cross_entropy_forward(rec, loss.t, row_loss.t, lse.t, logits, targets);
    ops::cross_entropy_backward(rec, dlogits.t, logits, targets, lse.t, loss.t, dloss_scale);
  });
  Reference want = reference(logits0, targets0, vocab, dloss_scale);

  auto got_lse = download(lse.t), got_row_loss = download(row_loss.t), got_loss = download(loss.t);
  test::expect_close(got_lse, narrow(want.lse), 1e-5, "cross_entropy_forward lse", {rows});
  test::expect_close(got_row_loss, narrow(want.row_loss), 1e-5, "cross_entropy_forward row_loss", {rows});
  for (size_t r = 0; r < rows; ++r) {
    if (!counted(targets0[r], vocab)) {
      EXPECT_EQ(got_row_loss[r], 0.0f) << "ignored row " << r;
    }
  }
  EXPECT_NEAR(got_loss[0], want.loss[0], 1e-5 * std::fabs(want.loss[0])) << "mean loss";
  EXPECT_EQ(got_loss[1], want.loss[1]) << "count";
  record("max_rel_lse", got_lse, narrow(want.lse));
  record("max_rel_row_loss", got_row_loss, narrow(want.row_loss));
  record("rel_loss", want.loss[0] != 0 ? std::fabs(got_loss[0] - want.loss[0]) / want.loss[0] : std::fabs(got_loss[0]));

  auto got_d = download(dlogits.t);
  auto want_d = test::rounded(narrow(want.dlogits), grad_dtype);
  test::expect_close(got_d, want_d, store_tol(grad_dtype), "cross_entropy_backward", {rows, vocab});
  record("max_rel_dlogits", got_d, want_d);
  for (size_t r = 0; r < rows; ++r) {
    if (counted(targets0[r], vocab)) continue;
    for (size_t c = 0; c < vocab; ++c) ASSERT_EQ(got_d[r * vocab + c], 0.0f) << "ignored row " << r << " col " << c;
  }

  loss.expect_guards_intact("loss");
  row_loss.expect_guards_intact("row_loss");
  lse.expect_guards_intact("lse");
  dlogits.expect_guards_intact("dlogits");
}

class CrossEntropyShapes : public test::GpuTest,
                           public ::testing::WithParamInterface<std::tuple<uint32_t, uint32_t, DType>> {};

TEST_P(CrossEntropyShapes, ForwardBackwardMatchReference) {
  auto [rows, vocab, dtype] = GetParam();
  auto targets = make_targets(rows, vocab, rows + vocab);
  check_forward_backward(dev(), rows, vocab, dtype, DType::f32, targets, 6.0f, 10 + rows + vocab);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CrossEntropyShapes,
                         ::testing::Combine(::testing::Values(1u, 5u, 17u), ::testing::Values(1u, 7u, 33u, 129u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)));

// f16 / bf16 logits with the gradient stored in the same dtype.
class CrossEntropyHalfGradient : public CrossEntropyShapes {};

TEST_P(CrossEntropyHalfGradient, ForwardBackwardMatchReference) {
  auto [rows, vocab, dtype] = GetParam();
  auto targets = make_targets(rows, vocab, 2 * rows + vocab);
  check_forward_backward(dev(), rows, vocab, dtype, dtype, targets, 6.0f, 20 + rows + vocab);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CrossEntropyHalfGradient,
                         ::testing::Combine(::testing::Values(1u, 5u, 17u), ::testing::Values(1u, 7u, 33u, 129u, 4864u),
                                            ::testing::Values(DType::f16, DType::bf16)));

// Qwen2's vocabulary (151936), two rows; the gradient in the logits dtype.
class CrossEntropyVocab : public test::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CrossEntropyVocab, ForwardBackwardMatchReference) {
  DType dtype = GetParam();
  std::vector<int32_t> targets{151935, 17};
  check_forward_backward(dev(), 2, 151936, dtype, dtype, targets, 10.0f, 5);
}

INSTANTIATE_TEST_SUITE_P(Vocab, CrossEntropyVocab, ::testing::Values(DType::f32, DType::f16));

class CrossEntropy : public test::GpuTest {};

TEST_F(CrossEntropy, AllIgnoredGivesZeroLossAndGradient) {
  std::vector<int32_t> targets{-100, -100, -5, 33, -100};  // 33 == V: out of range, ignored too
  check_forward_backward(dev(), 5, 33, DType::f32, DType::f32, targets, 4.0f, 91);
}

// More rows than one dispatch dimension allows (65535): the row-stride loop and the reduction's
// per-thread loop take the rest.
TEST_F(CrossEntropy, MoreRowsThanWorkgroups) {
  const uint32_t rows = 70001, vocab = 3;
  auto targets = make_targets(rows, vocab, 93);
  check_forward_backward(dev(), rows, vocab, DType::f32, DType::f32, targets, 4.0f, 94);
}

// dlogits written over logits (the memory-saving form for a large vocabulary).
TEST_F(CrossEntropy, BackwardInPlace) {
  const uint32_t rows = 5, vocab = 129;
  for (DType dtype : {DType::f32, DType::f16}) {
    auto targets0 = make_targets(rows, vocab, 95);
    auto logits0 = test::rounded(test::random_values(size_t(rows) * vocab, 96, 6.0f), dtype);
    auto logits = test::tensor_from(dev(), {rows, vocab}, dtype, logits0);
    forward_backward_in_place(dev(), logits, targets0);
    Reference want = reference(logits0, targets0, vocab, 0.5);
    test::expect_close(download(logits), test::rounded(narrow(want.dlogits), dtype), store_tol(dtype),
                       std::string("cross_entropy_backward in place ") + dtype_name(dtype), {rows, vocab});
  }
}

// Gemma 3's final logit softcapping: logits capped in place (ops::softcap_forward), the loss on them, and the
// backward's softcap giving the raw logits' gradient in place. Against the references of the same steps.
TEST_F(CrossEntropy, SoftcappedBackwardInPlace) {
  const uint32_t rows = 7, vocab = 301;
  const float cap = 8.0f;
  auto targets0 = make_targets(rows, vocab, 98);
  auto raw0 = test::random_values(size_t(rows) * vocab, 99, 20.0f);  // well into tanh's flat part
  auto logits = test::tensor_from(dev(), {rows, vocab}, DType::f32, raw0);
  const float loss = forward_backward_in_place(dev(), logits, targets0, cap, true);
  std::vector<float> capped0(raw0.size());
  ops::ref::softcap_forward(capped0, raw0, cap);
  Reference want = reference(capped0, targets0, vocab, 0.5);
  std::vector<double> d(raw0.size());
  ops::ref::cross_entropy_backward<double>(d, widen(capped0), targets0, want.lse, want.loss, vocab, 0.5, cap);
  test::expect_close(download(logits), narrow(d), 1e-5, "softcapped cross_entropy_backward in place", {rows, vocab});
  EXPECT_NEAR(loss, want.loss[0], 1e-5 * std::fabs(want.loss[0]));
}

// The f16 rows read eight logits a thread where the vocabulary is a multiple of 8 (shaders/common/f16x8.glsl):
// the softcap's factor on that path too, in place, against the reference on the f16-rounded logits.
TEST_F(CrossEntropy, SoftcappedBackwardF16EightAThread) {
  const uint32_t rows = 5, vocab = 4864;
  const float cap = 8.0f;
  auto targets0 = make_targets(rows, vocab, 96);
  auto capped0 = test::rounded(test::random_values(size_t(rows) * vocab, 97, 7.0f), DType::f16);
  auto logits = test::tensor_from(dev(), {rows, vocab}, DType::f16, capped0);
  const float loss = forward_backward_in_place(dev(), logits, targets0, cap);
  Reference want = reference(capped0, targets0, vocab, 0.5);
  std::vector<double> d(capped0.size());
  ops::ref::cross_entropy_backward<double>(d, widen(capped0), targets0, want.lse, want.loss, vocab, 0.5, cap);
  test::expect_close(download(logits), test::rounded(narrow(d), DType::f16), 2e-3, "softcapped f16 backward in place",
                     {rows, vocab});
  EXPECT_NEAR(loss, want.loss[0], 1e-5 * std::fabs(want.loss[0]));
}

// The reference's softcap: d loss(c·tanh(z / c)) / dz by central differences in z.
TEST(CrossEntropyReference, SoftcappedBackwardMatchesFiniteDifferences) {
  const uint32_t rows = 3, vocab = 5;
  const double cap = 4.0;
  std::vector<int32_t> targets{1, 4, -100};
  auto raw = widen(test::random_values(size_t(rows) * vocab, 100, 9.0f));
  auto capped_of = [&](const std::vector<double>& z) {
    std::vector<double> l(z.size());
    for (size_t i = 0; i < z.size(); ++i) l[i] = cap * std::tanh(z[i] / cap);
    return l;
  };
  auto loss_of = [&](const std::vector<double>& z) {
    std::vector<double> loss(2), row_loss(rows), lse(rows);
    ops::ref::cross_entropy_forward<double>(loss, row_loss, lse, capped_of(z), targets, vocab);
    return loss[0];
  };
  const std::vector<double> capped = capped_of(raw);
  std::vector<double> loss(2), row_loss(rows), lse(rows), dz(raw.size());
  ops::ref::cross_entropy_forward<double>(loss, row_loss, lse, capped, targets, vocab);
  ops::ref::cross_entropy_backward<double>(dz, capped, targets, lse, loss, vocab, 1.0, cap);
  const double h = 1e-6;
  for (size_t i = 0; i < raw.size(); ++i) {
    auto zp = raw, zm = raw;
    zp[i] += h;
    zm[i] -= h;
    const double fd = (loss_of(zp) - loss_of(zm)) / (2 * h);
    EXPECT_NEAR(dz[i], fd, 1e-7 * (1 + std::fabs(fd))) << "element " << i;
  }
}

TEST(CrossEntropyReference, BackwardMatchesFiniteDifferences) {
  const uint32_t rows = 4, vocab = 6;
  const double dloss_scale = 1.7;
  std::vector<int32_t> targets{2, -100, 5, 0};
  auto logits = widen(test::random_values(size_t(rows) * vocab, 97, 3.0f));
  auto loss_of = [&](const std::vector<double>& l) {
    std::vector<double> loss(2), row_loss(rows), lse(rows);
    ops::ref::cross_entropy_forward<double>(loss, row_loss, lse, l, targets, vocab);
    return dloss_scale * loss[0];
  };
  std::vector<double> loss(2), row_loss(rows), lse(rows), dlogits(logits.size());
  ops::ref::cross_entropy_forward<double>(loss, row_loss, lse, logits, targets, vocab);
  ops::ref::cross_entropy_backward<double>(dlogits, logits, targets, lse, loss, vocab, dloss_scale);
  const double h = 1e-6;
  for (size_t i = 0; i < logits.size(); ++i) {
    auto lp = logits, lm = logits;
    lp[i] += h;
    lm[i] -= h;
    double fd = (loss_of(lp) - loss_of(lm)) / (2 * h);
    EXPECT_NEAR(dlogits[i], fd, 1e-7 * (1 + std::fabs(fd))) << "element " << i;
  }
}

class ArgmaxShapes : public test::GpuTest,
                     public ::testing::WithParamInterface<std::tuple<uint32_t, uint32_t, DType>> {};

TEST_P(ArgmaxShapes, MatchesReferenceWithTies) {
  auto [rows, cols, dtype] = GetParam();
  auto x0 = test::random_values(size_t(rows) * cols, 30 + rows + cols, 4.0f);
  // Deliberate ties at the row maximum after column a: near and far (other threads and subgroups,
  // the same thread for workgroups of 64, 256 or 1024), the last column; and one constant row.
  std::vector<int32_t> first_tied(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    float* row = x0.data() + size_t(r) * cols;
    uint32_t a = (r * 13) % cols;
    row[a] = 5.0f;  // above every random value (|x| <= 4)
    for (uint32_t step : {1 + r * 97 % 500, 64u, 256u, 1024u, cols - 1 - a})
      if (step > 0 && a + step < cols) row[a + step] = 5.0f;
    first_tied[r] = int32_t(a);
    if (r == 2) {
      std::fill(row, row + cols, -0.5f);
      first_tied[r] = 0;
    }
  }
  x0 = test::rounded(x0, dtype);
  auto x = test::tensor_from(dev(), {rows, cols}, dtype, x0);
  auto idx = test::poisoned(dev(), {rows}, DType::i32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::argmax_forward(rec, idx.t, x); });
  std::vector<int32_t> want(rows);
  ops::ref::argmax_forward(want, x0, cols);
  EXPECT_EQ(want, first_tied) << "the reference must pick the first of the tied maxima";
  EXPECT_EQ(download_i32(idx.t), want);
  idx.expect_guards_intact("argmax_forward");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ArgmaxShapes,
                         ::testing::Combine(::testing::Values(1u, 5u, 17u), ::testing::Values(1u, 7u, 33u, 129u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)));
INSTANTIATE_TEST_SUITE_P(Vocab, ArgmaxShapes,
                         ::testing::Combine(::testing::Values(1u, 3u), ::testing::Values(151936u),
                                            ::testing::Values(DType::f32, DType::f16)));

TEST_F(CrossEntropy, ArgmaxOfMinusInfinityRowIsZero) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x0(2 * 300, -inf);
  x0[300 + 257] = -3.0f;
  auto x = test::tensor_from(dev(), {2, 300}, DType::f32, x0);
  auto idx = test::poisoned(dev(), {2}, DType::i32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::argmax_forward(rec, idx.t, x); });
  EXPECT_EQ(download_i32(idx.t), (std::vector<int32_t>{0, 257}));
}

TEST_F(CrossEntropy, BadInputsRaiseErrors) {
  const uint32_t rows = 4, vocab = 8;
  auto logits = Tensor::empty(dev(), {rows, vocab}, DType::f32);
  auto targets = Tensor::empty(dev(), {rows}, DType::i32);
  auto targets_f32 = Tensor::empty(dev(), {rows}, DType::f32);
  auto targets_short = Tensor::empty(dev(), {rows - 1}, DType::i32);
  auto loss = Tensor::empty(dev(), {2}, DType::f32);
  auto loss_1 = Tensor::empty(dev(), {1}, DType::f32);
  auto vec = Tensor::empty(dev(), {rows}, DType::f32);
  auto vec_f16 = Tensor::empty(dev(), {rows}, DType::f16);
  auto dlogits_f16 = Tensor::empty(dev(), {rows, vocab}, DType::f16);
  auto dlogits_wide = Tensor::empty(dev(), {rows, vocab + 1}, DType::f32);
  auto logits_i32 = Tensor::empty(dev(), {rows, vocab}, DType::i32);
  vk::Recorder rec(dev());
  const std::string fwd = "cross_entropy_forward", bwd = "cross_entropy_backward", am = "argmax_forward";
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss, vec, vec, logits, targets_f32); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss, vec, vec, logits, targets_short); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss_1, vec, vec, logits, targets); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss, vec, vec_f16, logits, targets); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss, vec, vec, logits_i32, targets); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_forward(rec, loss, vec, vec, Tensor{}, targets); }, fwd);
  expect_error_naming([&] { ops::cross_entropy_backward(rec, dlogits_f16, logits, targets, vec, loss); }, bwd);
  expect_error_naming([&] { ops::cross_entropy_backward(rec, dlogits_wide, logits, targets, vec, loss); }, bwd);
  expect_error_naming([&] { ops::cross_entropy_backward(rec, logits, logits, targets, vec, loss_1); }, bwd);
  expect_error_naming([&] { ops::argmax_forward(rec, vec, logits); }, am);
  expect_error_naming([&] { ops::argmax_forward(rec, targets_short, logits); }, am);
  expect_error_naming([&] { ops::argmax_forward(rec, targets, logits_i32); }, am);
}

}  // namespace
}  // namespace ls
