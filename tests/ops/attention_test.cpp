// Causal grouped-query attention against the CPU reference (double accumulation), with and without a
// sliding window (forward, backward and the cached replay; a window shorter than the keys takes the row
// kernels).
// Tolerances (relative, test::expect_close): forward f32 1e-5, f16 2e-3 (f16 inputs, one rounding of the
// output; lse stays f32: 1e-5); backward (f32) 1e-5. The reference backward is checked by central finite
// differences of the reference forward in double (|fd - analytic| <= 1e-8 + 1e-6 |analytic|). The backward
// with f16 q, k, v and o holds the f32 tolerance against the reference on the same rounded values.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "ops/attention.h"
#include "ops/attention_flash.h"
#include "ops/attention_products.h"
#include "ops/copy_rows.h"
#include "ops/matmul.h"
#include "support/testing.h"

namespace ls {
namespace {

using ops::AttentionDims;

double tol(DType t) { return t == DType::f32 ? 1e-5 : 2e-3; }
// Attention through matrix products on tensor cores (ops/attention_products.h) rounds q, k, v, the
// probabilities and the gradients to f16 as the products read them: measured on the H100 up to ~1e-3
// of the largest value and 8.5e-3 by this per-element measure (test::expect_close).
constexpr double kProductsTol = 1.5e-2;
// The flash kernels (ops/attention_flash.h), taken where the products path does not fit, compute in f32
// like the row kernels.
// On tensor cores (flash or products) q, k, v, the probabilities and the gradients are rounded to f16.
double tol(vk::Device& dev, const AttentionDims& d, DType t) {
  const bool f16_products =
      ops::detail::attention_flash_coopmat_fit(dev, d, t) || ops::detail::attention_products_fit(dev, d, t);
  return f16_products ? std::max(tol(t), kProductsTol) : tol(t);
}
float default_scale(const AttentionDims& d) { return 1.0f / std::sqrt(float(d.D)); }

Shape q_shape(const AttentionDims& d) { return {d.B, d.T, d.H, d.D}; }
Shape kv_shape(const AttentionDims& d) { return {d.B, d.S, d.KV, d.D}; }
Shape lse_shape(const AttentionDims& d) { return {d.B, d.H, d.T}; }
size_t numel(const Shape& s) {
  size_t n = 1;
  for (auto x : s) n *= x;
  return n;
}

// expect_close, plus the measured error on stdout for the record: the largest
// |actual - expected| / (|expected| + mean |expected|), the quantity expect_close holds to rtol.
void check(std::span<const float> actual, std::span<const float> expected, double rtol, const std::string& what,
           const Shape& shape) {
  test::expect_close(actual, expected, rtol, what, shape);
  double mean = 0, worst = 0;
  for (float e : expected) mean += std::fabs(e);
  mean /= double(expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double err = std::fabs(double(actual[i]) - expected[i]), scale = std::fabs(expected[i]) + mean;
    if (err > 0) worst = std::max(worst, scale > 0 ? err / scale : INFINITY);
  }
  std::printf("  [measured] %-28s %-18s rel err %.2e (rtol %.0e), max abs err %.2e\n", what.c_str(),
              shape_string(shape).c_str(), worst, rtol, test::compare(actual, expected).max_abs);
}

std::string name_of(const AttentionDims& d) {
  return "B" + std::to_string(d.B) + "_T" + std::to_string(d.T) + "_S" + std::to_string(d.S) + "_H" +
         std::to_string(d.H) + "_KV" + std::to_string(d.KV) + "_D" + std::to_string(d.D) +
         (d.window ? "_W" + std::to_string(d.window) : "");
}

// Random inputs as the GPU sees them in `dtype`. q is drawn at 4x scale so the softmax is far from flat.
struct Inputs {
  std::vector<float> q, k, v;
  Inputs(const AttentionDims& d, DType dtype, uint32_t seed)
      : q(test::rounded(test::random_values(numel(q_shape(d)), seed + 1, 4.0f), dtype)),
        k(test::rounded(test::random_values(numel(kv_shape(d)), seed + 2), dtype)),
        v(test::rounded(test::random_values(numel(kv_shape(d)), seed + 3), dtype)) {}
};

struct ForwardResult {
  std::vector<float> o, lse;
};

ForwardResult gpu_forward(vk::Device& dev, const AttentionDims& d, DType dtype, const Inputs& x, float scale,
                          bool products = false) {
  auto q = test::tensor_from(dev, q_shape(d), dtype, x.q);
  auto k = test::tensor_from(dev, kv_shape(d), dtype, x.k);
  auto v = test::tensor_from(dev, kv_shape(d), dtype, x.v);
  auto o = test::poisoned(dev, q_shape(d), dtype);
  auto lse = test::poisoned(dev, lse_shape(d), DType::f32);
  test::run(dev, [&](vk::Recorder& rec) {
    if (products)
      ops::detail::attention_forward_products(rec, o.t, lse.t, q, k, v, d, scale);
    else
      ops::attention_forward(rec, o.t, lse.t, q, k, v, scale, d.window);
  });
  o.expect_guards_intact("attention o");
  lse.expect_guards_intact("attention lse");
  return {download(o.t), download(lse.t)};
}

ForwardResult ref_forward(const AttentionDims& d, const Inputs& x, float scale) {
  ForwardResult r{std::vector<float>(numel(q_shape(d))), std::vector<float>(numel(lse_shape(d)))};
  ops::ref::attention_forward(r.o, r.lse, x.q, x.k, x.v, d, scale);
  return r;
}

// (B, T, S, H, KV, D): S = past + T.
const AttentionDims kCases[] = {
    {.B = 1, .T = 1, .S = 1, .H = 1, .KV = 1, .D = 8},
    {.B = 1, .T = 7, .S = 7, .H = 4, .KV = 2, .D = 16},
    {.B = 2, .T = 33, .S = 33, .H = 6, .KV = 2, .D = 64},
    {.B = 1, .T = 129, .S = 129, .H = 14, .KV = 2, .D = 64},  // Qwen2.5-0.5B heads, 3 key chunks
    {.B = 1, .T = 5, .S = 12, .H = 14, .KV = 2, .D = 64},     // KV cache: past = 7
    {.B = 1, .T = 1, .S = 20, .H = 14, .KV = 2, .D = 64},     // decode: one new token
    {.B = 1, .T = 3, .S = 131, .H = 2, .KV = 1, .D = 256},    // largest head dim, past = 128 over chunks
    {.B = 2, .T = 70, .S = 70, .H = 3, .KV = 3, .D = 40},     // plain MHA, odd head dim, 2 query chunks
    {.B = 1, .T = 70, .S = 70, .H = 4, .KV = 2, .D = 128},    // Qwen2.5-7B head dim: the 128 flash kernels
    {.B = 2, .T = 20, .S = 45, .H = 4, .KV = 1, .D = 96},     // 128 kernels, padded dims, past = 25
    {.B = 1, .T = 300, .S = 300, .H = 4, .KV = 2, .D = 64},   // tensor cores: the backward split in 2
    {.B = 1, .T = 200, .S = 200, .H = 2, .KV = 1, .D = 128},  // the same with the 128 kernels, a partial block
    {.B = 2, .T = 256, .S = 256, .H = 3, .KV = 1, .D = 64},   // two sequences; on tensor cores the forward split
    {.B = 33000, .T = 1, .S = 2, .H = 1, .KV = 1, .D = 4},    // > 32768 rows: workgroups fold into y
};

class AttentionForward : public test::GpuTest,
                         public ::testing::WithParamInterface<std::tuple<AttentionDims, DType>> {};

TEST_P(AttentionForward, MatchesReference) {
  auto [d, dtype] = GetParam();
  float scale = default_scale(d);
  Inputs x(d, dtype, 100 + d.T * 7 + d.S);
  auto got = gpu_forward(dev(), d, dtype, x, scale);
  auto want = ref_forward(d, x, scale);
  std::string tag = std::string("attention_forward ") + dtype_name(dtype);
  check(got.o, test::rounded(want.o, dtype), tol(dev(), d, dtype), tag + " o", q_shape(d));
  check(got.lse, want.lse, tol(dev(), d, DType::f32), tag + " lse", lse_shape(d));
}

TEST_P(AttentionForward, ThroughMatrixProductsMatchesReference) {
  auto [d, dtype] = GetParam();
  if (d.S != d.T || dtype != DType::f32 || d.T < 16 || d.window)
    GTEST_SKIP() << "the products path is for f32 training shapes (S = T >= 16) without a window";
  float scale = default_scale(d);
  Inputs x(d, dtype, 100 + d.T * 7 + d.S);
  auto got = gpu_forward(dev(), d, dtype, x, scale, true);
  auto want = ref_forward(d, x, scale);
  const double t = dev().coopmat() ? kProductsTol : tol(DType::f32);
  check(got.o, want.o, t, "attention products o", q_shape(d));
  check(got.lse, want.lse, t, "attention products lse", lse_shape(d));
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionForward,
                         ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values(DType::f32, DType::f16)),
                         [](const auto& p) {
                           return name_of(std::get<0>(p.param)) + "_" + dtype_name(std::get<1>(p.param));
                         });

// The split flash forward's combination (shaders/flash_combine.comp, reached through the cooperative-matrix-2
// kernels only) on its own, against the same sums in double: random partials with their rows' maxima and sums,
// one split of each row left empty (max -1e30, sum 0, output 0) as a split without keys leaves it.
// Tolerances: f32 1e-6 relative, f16 the output's rounding (2e-3).
TEST(FlashCombine, AddsSplitPartialsIntoOutputAndLse) {
  vk::Device& dev = test::device();
  const AttentionDims d{.B = 2, .T = 5, .S = 5, .H = 3, .KV = 1, .D = 8};
  const uint32_t splits = 3, rows = d.B * d.H * d.T;
  std::vector<float> part = test::random_values(size_t(splits) * rows * d.D, 71);
  std::vector<float> ml(size_t(splits) * rows * 2);
  const std::vector<float> m = test::random_values(size_t(splits) * rows, 72, 3.0f);
  const std::vector<float> l = test::random_values(size_t(splits) * rows, 73);
  for (uint32_t s = 0; s < splits; ++s)
    for (uint32_t r = 0; r < rows; ++r) {
      const size_t i = size_t(s) * rows + r;
      const bool empty = s == r % splits;
      ml[2 * i] = empty ? -1.0e30f : m[i];
      ml[2 * i + 1] = empty ? 0.0f : 1.0f + std::fabs(l[i]) * 30;
      if (empty) std::fill_n(part.begin() + long(i * d.D), d.D, 0.0f);
    }
  std::vector<float> want_o(size_t(rows) * d.D), want_lse(rows);
  for (uint32_t row = 0; row < rows; ++row) {  // row = (b·H + h)·T + t
    const uint32_t t = row % d.T, h = row / d.T % d.H, b = row / (d.T * d.H);
    double M = -1e300, L = 0;
    for (uint32_t s = 0; s < splits; ++s) M = std::max(M, double(ml[2 * (size_t(s) * rows + row)]));
    std::vector<double> acc(d.D);
    for (uint32_t s = 0; s < splits; ++s) {
      const size_t i = size_t(s) * rows + row;
      const double w = std::exp(double(ml[2 * i]) - M);
      L += ml[2 * i + 1] * w;
      for (uint32_t j = 0; j < d.D; ++j) acc[j] += part[i * d.D + j] * w;
    }
    for (uint32_t j = 0; j < d.D; ++j) want_o[((size_t(b) * d.T + t) * d.H + h) * d.D + j] = float(acc[j] / L);
    want_lse[row] = float(M + std::log(L));
  }
  for (DType dtype : {DType::f32, DType::f16}) {
    auto part_t = test::tensor_from(dev, {splits * rows, d.D}, DType::f32, part);
    auto ml_t = test::tensor_from(dev, {splits * rows, 2}, DType::f32, ml);
    auto o = test::poisoned(dev, q_shape(d), dtype);
    auto lse = test::poisoned(dev, lse_shape(d), DType::f32);
    test::run(dev, [&](vk::Recorder& rec) { ops::detail::flash_combine(rec, o.t, lse.t, part_t, ml_t, d, splits); });
    o.expect_guards_intact("combined o");
    lse.expect_guards_intact("combined lse");
    const double rtol = dtype == DType::f32 ? 1e-6 : 2e-3;
    check(download(o.t), test::rounded(want_o, dtype), rtol, std::string("flash_combine o ") + dtype_name(dtype), q_shape(d));
    check(download(lse.t), want_lse, 1e-6, "flash_combine lse", lse_shape(d));
  }
}

// delta = rowsum(do ∘ o) for the cooperative-matrix-2 backward kernels, against double sums; o in f32 and f16 (the
// reference reads the same rounded o). D 72 is not a multiple of the kernel's 16 lanes; 1,111 rows leave the last
// workgroup part empty. With the f16 copy asked for, it is do rounded to f16, exactly.
TEST(FlashDelta, RowSumsOfDoTimesO) {
  vk::Device& dev = test::device();
  for (const AttentionDims d : {AttentionDims{.B = 2, .T = 5, .S = 5, .H = 3, .KV = 1, .D = 8},
                                AttentionDims{.B = 1, .T = 101, .S = 101, .H = 11, .KV = 11, .D = 72}}) {
    const size_t n = size_t(d.B) * d.T * d.H * d.D;
    const std::vector<float> do_ = test::random_values(n, 81);
    for (DType dtype : {DType::f32, DType::f16}) {
      const std::vector<float> o = test::rounded(test::random_values(n, 82), dtype);
      std::vector<float> want(size_t(d.B) * d.H * d.T);
      for (uint32_t b = 0; b < d.B; ++b)
        for (uint32_t t = 0; t < d.T; ++t)
          for (uint32_t h = 0; h < d.H; ++h) {
            double sum = 0;
            const size_t row = (size_t(b) * d.T + t) * d.H + h;
            for (uint32_t j = 0; j < d.D; ++j) sum += double(do_[row * d.D + j]) * o[row * d.D + j];
            want[(size_t(b) * d.H + h) * d.T + t] = float(sum);
          }
      auto do_t = test::tensor_from(dev, q_shape(d), DType::f32, do_);
      auto o_t = test::tensor_from(dev, q_shape(d), dtype, o);
      for (bool copy : {false, true}) {
        auto delta = test::poisoned(dev, lse_shape(d), DType::f32);
        auto do16 = test::poisoned(dev, q_shape(d), DType::f16);
        test::run(dev, [&](vk::Recorder& rec) {
          ops::detail::flash_delta(rec, delta.t, do_t, o_t, d, copy ? do16.t : Tensor());
        });
        delta.expect_guards_intact("delta");
        do16.expect_guards_intact("do16");
        const std::string what = std::string("flash_delta ") + dtype_name(dtype) + (copy ? " with dO's f16 copy" : "");
        check(download(delta.t), want, 1e-5, what, lse_shape(d));
        if (copy) {
          EXPECT_EQ(download(do16.t), test::rounded(do_, DType::f16)) << what;
        }
      }
    }
  }
}

// dO as the split sums of the product that makes it (o's dx left unreduced, ops::matmul_backward_x_unreduced; a
// reduction of 512 over 24 rows splits on lavapipe's shader cores): delta and dO's f16 copy are the bits of the pass
// over the reduced product. The training step takes this where the flash kernels are the cooperative-matrix-2 ones.
TEST(FlashDelta, SplitSumsGiveTheBitsOfTheReducedProduct) {
  vk::Device& dev = test::device();
  const AttentionDims d{.B = 1, .T = 24, .S = 24, .H = 4, .KV = 4, .D = 10};
  const uint32_t M = d.T, C = 512, HD = d.H * d.D;
  auto dy = test::tensor_from(dev, {M, C}, DType::f32, test::random_values(size_t(M) * C, 90));
  auto w = test::tensor_from(dev, {C, HD}, DType::f32, test::random_values(size_t(C) * HD, 91));
  for (DType dtype : {DType::f32, DType::f16}) {
    auto o = test::tensor_from(dev, q_shape(d), dtype, test::rounded(test::random_values(size_t(M) * HD, 92), dtype));
    auto reduced = Tensor::empty(dev, {M, HD}, DType::f32, "dO"), unwritten = Tensor::empty(dev, {M, HD}, DType::f32, "dO");
    auto delta = test::poisoned(dev, lse_shape(d), DType::f32), delta_sums = test::poisoned(dev, lse_shape(d), DType::f32);
    auto do16 = test::poisoned(dev, q_shape(d), DType::f16), do16_sums = test::poisoned(dev, q_shape(d), DType::f16);
    ops::SplitSums sums;
    test::run(dev, [&](vk::Recorder& rec) {
      ops::matmul_backward_x(rec, reduced, dy, w);
      ops::detail::flash_delta(rec, delta.t, reduced.reshape(q_shape(d)), o, d, do16.t);
      sums = ops::matmul_backward_x_unreduced(rec, unwritten, dy, w);
      ops::detail::flash_delta(rec, delta_sums.t, unwritten.reshape(q_shape(d)), o, d, do16_sums.t, sums);
    });
    const std::string what = std::string("flash_delta from split sums, o ") + dtype_name(dtype);
    if (!dev.coopmat()) {
      EXPECT_GT(sums.splits, 1u) << what;
    }
    EXPECT_EQ(download(delta_sums.t), download(delta.t)) << what;
    EXPECT_EQ(download(do16_sums.t), download(do16.t)) << what;
    delta_sums.expect_guards_intact(what.c_str());
    do16_sums.expect_guards_intact(what.c_str());
  }
}

class AttentionBackward : public test::GpuTest, public ::testing::WithParamInterface<AttentionDims> {};

struct Gradients {
  std::vector<float> dq, dk, dv;
};

void backward_matches_reference(vk::Device& gpu, const AttentionDims& d, bool products, DType dtype = DType::f32);

TEST_P(AttentionBackward, MatchesReference) { backward_matches_reference(dev(), GetParam(), false); }

// q, k, v and o in f16, as training keeps them where the products round them to f16 anyway (model/layer_acts.h):
// read as they are by the cooperative-matrix-2 kernels, widened to f32 for the others. The reference runs on the
// same rounded values, so the tolerance is the f32 inputs'.
TEST_P(AttentionBackward, F16InputsMatchReference) { backward_matches_reference(dev(), GetParam(), false, DType::f16); }

// The products path (taken on devices with tensor cores) on every device, against the same reference:
// exact f32 products on lavapipe, f16 operands on tensor cores.
TEST_P(AttentionBackward, ThroughMatrixProductsMatchesReference) {
  const AttentionDims d = GetParam();
  if (d.S != d.T || d.T < 16 || d.window)
    GTEST_SKIP() << "the products path is for training shapes (S = T >= 16) without a window";
  backward_matches_reference(dev(), d, true);
}

void backward_matches_reference(vk::Device& gpu, const AttentionDims& d, bool products, DType dtype) {
  float scale = default_scale(d);
  Inputs x(d, dtype, 300 + d.T * 7 + d.S);
  auto dout = test::random_values(numel(q_shape(d)), 400 + d.T);
  auto saved = ref_forward(d, x, scale);  // the forward's saved o and lse: reference values for GPU and CPU alike
  saved.o = test::rounded(saved.o, dtype);

  auto q = test::tensor_from(gpu, q_shape(d), dtype, x.q);
  auto k = test::tensor_from(gpu, kv_shape(d), dtype, x.k);
  auto v = test::tensor_from(gpu, kv_shape(d), dtype, x.v);
  auto o = test::tensor_from(gpu, q_shape(d), dtype, saved.o);
  auto lse = test::tensor_from(gpu, lse_shape(d), DType::f32, saved.lse);
  auto dO = test::tensor_from(gpu, q_shape(d), DType::f32, dout);
  auto dq = test::poisoned(gpu, q_shape(d), DType::f32);
  auto dk = test::poisoned(gpu, kv_shape(d), DType::f32);
  auto dv = test::poisoned(gpu, kv_shape(d), DType::f32);
  vk::Recorder rec(gpu);
  if (products)
    ops::detail::attention_backward_products(rec, dq.t, dk.t, dv.t, dO, q, k, v, o, lse, d, scale);
  else
    ops::attention_backward(rec, dq.t, dk.t, dv.t, dO, q, k, v, o, lse, scale, d.window);
  auto program = rec.finish();
  program.run();
  Gradients got{download(dq.t), download(dk.t), download(dv.t)};

  Gradients want{std::vector<float>(x.q.size()), std::vector<float>(x.k.size()), std::vector<float>(x.v.size())};
  ops::ref::attention_backward(want.dq, want.dk, want.dv, dout, x.q, x.k, x.v, saved.o, saved.lse, d, scale);
  const double t = products && gpu.coopmat() ? kProductsTol : tol(gpu, d, DType::f32);
  const std::string tag = std::string("attention_backward ") + (dtype == DType::f16 ? "f16 " : "");
  check(got.dq, want.dq, t, tag + "dq", q_shape(d));
  check(got.dk, want.dk, t, tag + "dk", kv_shape(d));
  check(got.dv, want.dv, t, tag + "dv", kv_shape(d));
  dq.expect_guards_intact("attention dq");
  dk.expect_guards_intact("attention dk");
  dv.expect_guards_intact("attention dv");

  // Replaying overwrites (no accumulation) and gives the same bits (no atomics).
  program.run();
  EXPECT_EQ(download(dq.t), got.dq);
  EXPECT_EQ(download(dk.t), got.dk);
  EXPECT_EQ(download(dv.t), got.dv);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionBackward, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return name_of(p.param); });

// Sliding windows (W): shorter than the keys, over one and several key chunks of 64, with a KV-cache prefix,
// a window of 1 (each query sees itself), and one as long as the keys (no effect: the usual kernels).
const AttentionDims kWindowCases[] = {
    {.B = 2, .T = 33, .S = 33, .H = 6, .KV = 2, .D = 64, .window = 8},
    {.B = 1, .T = 150, .S = 150, .H = 4, .KV = 2, .D = 32, .window = 70},
    {.B = 1, .T = 5, .S = 40, .H = 4, .KV = 2, .D = 16, .window = 9},
    {.B = 1, .T = 9, .S = 9, .H = 2, .KV = 1, .D = 8, .window = 1},
    {.B = 1, .T = 20, .S = 20, .H = 4, .KV = 2, .D = 16, .window = 20},
};
INSTANTIATE_TEST_SUITE_P(Windows, AttentionForward,
                         ::testing::Combine(::testing::ValuesIn(kWindowCases), ::testing::Values(DType::f32, DType::f16)),
                         [](const auto& p) {
                           return name_of(std::get<0>(p.param)) + "_" + dtype_name(std::get<1>(p.param));
                         });
INSTANTIATE_TEST_SUITE_P(Windows, AttentionBackward, ::testing::ValuesIn(kWindowCases),
                         [](const auto& p) { return name_of(p.param); });

// A window shorter than the keys changes the result: the masked keys are not seen.
TEST(AttentionWindowReference, WindowChangesTheOutput) {
  AttentionDims d{.B = 1, .T = 12, .S = 12, .H = 2, .KV = 1, .D = 8, .window = 4};
  const Inputs x(d, DType::f32, 5);
  const auto windowed = ref_forward(d, x, 0.5f);
  d.window = 0;
  const auto full = ref_forward(d, x, 0.5f);
  const size_t row = size_t(d.H) * d.D;  // queries 0 .. 3 see the same keys either way
  EXPECT_EQ(std::vector<float>(windowed.o.begin(), windowed.o.begin() + 4 * row),
            std::vector<float>(full.o.begin(), full.o.begin() + 4 * row));
  EXPECT_GT(test::compare(windowed.o, full.o).max_abs, 1e-2);
}

// A key j may only change queries with past + t >= j. NaN in the last key (seen only by the last
// query) must leave every other query's output bit-identical, and poison the last one.
class AttentionMask : public test::GpuTest, public ::testing::WithParamInterface<AttentionDims> {};

TEST_P(AttentionMask, MaskedKeysHaveNoInfluence) {
  const AttentionDims d = GetParam();
  float scale = default_scale(d);
  Inputs x(d, DType::f32, 500);
  auto clean = gpu_forward(dev(), d, DType::f32, x, scale);
  for (uint32_t g = 0; g < d.KV; ++g)
    for (uint32_t c = 0; c < d.D; ++c) {
      size_t i = ((size_t(d.S) - 1) * d.KV + g) * d.D + c;  // batch 0, key S - 1
      // The flash and products paths multiply masked keys' values by exactly 0, which a NaN would poison:
      // they get the largest finite value instead (rounded into f16 range as the products read it).
      const bool times_zero = ops::detail::attention_flash_fit(dev(), d, DType::f32) ||
                              ops::detail::attention_products_fit(dev(), d, DType::f32);
      const float poison = times_zero ? 3e38f : NAN;
      x.k[i] = poison;
      x.v[i] = poison;
    }
  auto dirty = gpu_forward(dev(), d, DType::f32, x, scale);
  size_t row = size_t(d.H) * d.D;  // one query position, all heads
  for (uint32_t t = 0; t + 1 < d.T; ++t)
    for (size_t i = t * row; i < (t + 1) * row; ++i)
      ASSERT_EQ(dirty.o[i], clean.o[i]) << "query " << t << ", element " << i;
  for (uint32_t h = 0; h < d.H; ++h)
    for (uint32_t t = 0; t + 1 < d.T; ++t) ASSERT_EQ(dirty.lse[h * d.T + t], clean.lse[h * d.T + t]);
  for (size_t i = (d.T - 1) * row; i < d.T * row; ++i)
    ASSERT_TRUE(std::isnan(dirty.o[i]) || dirty.o[i] != clean.o[i]) << "the last query must see key S - 1";
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionMask,
                         ::testing::Values(AttentionDims{.B = 1, .T = 7, .S = 7, .H = 4, .KV = 2, .D = 16},
                                           AttentionDims{.B = 1, .T = 70, .S = 70, .H = 2, .KV = 1, .D = 8},
                                           AttentionDims{.B = 1, .T = 5, .S = 12, .H = 4, .KV = 2, .D = 16}),
                         [](const auto& p) { return name_of(p.param); });

// L = sum(dO * o(q, k, v)); the reference backward must match central differences of the reference
// forward, all in double.
TEST(AttentionReference, BackwardMatchesFiniteDifferences) {
  for (AttentionDims d : {AttentionDims{.B = 1, .T = 4, .S = 4, .H = 2, .KV = 1, .D = 4},
                          AttentionDims{.B = 1, .T = 2, .S = 5, .H = 2, .KV = 1, .D = 4},
                          AttentionDims{.B = 1, .T = 5, .S = 7, .H = 2, .KV = 1, .D = 4, .window = 3}}) {
    SCOPED_TRACE(name_of(d));
    const double scale = 0.7;
    auto to_double = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
    std::vector<double> q = to_double(test::random_values(numel(q_shape(d)), 1, 2.0f));
    std::vector<double> k = to_double(test::random_values(numel(kv_shape(d)), 2));
    std::vector<double> v = to_double(test::random_values(numel(kv_shape(d)), 3));
    std::vector<double> dout = to_double(test::random_values(numel(q_shape(d)), 4));
    std::vector<double> o(q.size()), lse(numel(lse_shape(d)));
    auto loss = [&] {
      ops::ref::attention_forward(std::span<double>(o), std::span<double>(lse), std::span<const double>(q),
                                  std::span<const double>(k), std::span<const double>(v), d, scale);
      double l = 0;
      for (size_t i = 0; i < o.size(); ++i) l += dout[i] * o[i];
      return l;
    };
    loss();
    std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
    ops::ref::attention_backward(std::span<double>(dq), std::span<double>(dk), std::span<double>(dv),
                                 std::span<const double>(dout), std::span<const double>(q),
                                 std::span<const double>(k), std::span<const double>(v),
                                 std::span<const double>(o), std::span<const double>(lse), d, scale);
    const double eps = 1e-5;
    auto check_fd = [&](std::vector<double>& x, const std::vector<double>& grad, const char* what) {
      for (size_t i = 0; i < x.size(); ++i) {
        double keep = x[i];
        x[i] = keep + eps;
        double up = loss();
        x[i] = keep - eps;
        double down = loss();
        x[i] = keep;
        double fd = (up - down) / (2 * eps);
        EXPECT_NEAR(grad[i], fd, 1e-8 + 1e-6 * std::fabs(fd)) << what << "[" << i << "]";
      }
    };
    check_fd(q, dq, "dq");
    check_fd(k, dk, "dk");
    check_fd(v, dv, "dv");
  }
}

class AttentionBadInputs : public test::GpuTest {};

TEST_F(AttentionBadInputs, RaiseErrorsNamingTheOp) {
  auto& d = dev();
  auto t = [&](Shape s, DType dt = DType::f32) { return Tensor::empty(d, std::move(s), dt); };
  auto expect_error = [](const std::function<void()>& f, const char* op, const char* detail) {
    try {
      f();
      ADD_FAILURE() << "no error for: " << detail;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
    }
  };
  vk::Recorder rec(d);
  auto q = t({1, 4, 4, 8}), k = t({1, 4, 2, 8}), o = t({1, 4, 4, 8}), lse = t({1, 4, 4});
  // H = 3 is not a multiple of KV = 2.
  expect_error([&] { ops::attention_forward(rec, t({1, 4, 3, 8}), t({1, 3, 4}), t({1, 4, 3, 8}), k, k, 1.f); },
               "attention_forward", "not a multiple");
  // Head dims differ.
  expect_error([&] { ops::attention_forward(rec, o, lse, q, t({1, 4, 2, 16}), t({1, 4, 2, 16}), 1.f); },
               "attention_forward", "head dims differ");
  // S = 3 keys for T = 4 queries.
  expect_error([&] { ops::attention_forward(rec, o, lse, q, t({1, 3, 2, 8}), t({1, 3, 2, 8}), 1.f); },
               "attention_forward", "S < T");
  // v shaped unlike k.
  expect_error([&] { ops::attention_forward(rec, o, lse, q, k, t({1, 5, 2, 8}), 1.f); }, "attention_forward",
               "[1, 5, 2, 8]");
  // Mixed dtypes, bf16, empty tensor, head dim over 256, lse of the wrong shape.
  expect_error([&] { ops::attention_forward(rec, o, lse, q, k, t({1, 4, 2, 8}, DType::f16), 1.f); },
               "attention_forward", "dtypes differ");
  expect_error([&] {
    auto b = t({1, 4, 2, 8}, DType::bf16);
    ops::attention_forward(rec, b, lse, b, b, b, 1.f);
  }, "attention_forward", "bf16");
  expect_error([&] { ops::attention_forward(rec, o, lse, Tensor(), k, k, 1.f); }, "attention_forward", "empty");
  expect_error([&] {
    auto big = t({1, 2, 1, 320}), lb = t({1, 1, 2});
    ops::attention_forward(rec, big, lb, big, big, big, 1.f);
  }, "attention_forward", "over 256");
  expect_error([&] { ops::attention_forward(rec, o, t({1, 4, 5}), q, k, k, 1.f); }, "attention_forward", "lse");
  // Backward: q, k, v and o of one dtype, f32 gradients shaped like their inputs.
  auto h = t({1, 4, 4, 8}, DType::f16), hk = t({1, 4, 2, 8}, DType::f16);
  expect_error([&] { ops::attention_backward(rec, q, k, k, q, h, hk, hk, o, lse, 1.f); }, "attention_backward",
               "expected the dtype of q");
  expect_error([&] { ops::attention_backward(rec, h, k, k, q, q, k, k, o, lse, 1.f); }, "attention_backward", "dq");
  expect_error([&] { ops::attention_backward(rec, q, q, k, q, q, k, k, o, lse, 1.f); }, "attention_backward", "dk");
}

}  // namespace
}  // namespace ls

namespace ls {
namespace {

// A program recorded once over KV caches of capacity S_max, replayed with the fill level `past` written
// into a host-visible tensor between runs, must give what plain attention over the first past + T keys
// gives (the decode and chunked-prefill path of engine/infer), whatever the rows past them hold (NaN here).
class AttentionCached : public test::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(AttentionCached, ReplayedAtEveryFillLevelMatchesReference) {
  const DType dtype = GetParam();
  // T = 3: the split-keys decoding kernels (S = 137: three splits of 64 keys); T = 6 and 20: the flash
  // kernels where they fit (20: on tensor cores too), else one workgroup per query. The split kernels also at
  // the models' head sizes, 64 and 128 (their 16-byte loads sum o over 8 and 4 key subsets), and at 12, not a
  // multiple of 8 (the element-by-element partial pass).
  for (uint32_t W : {0u, 11u})
  for (uint32_t T : {3u, 6u, 20u})
  for (uint32_t D : {16u, 12u, 64u, 128u})
  for (uint32_t S : {37u, 137u}) {
  if (D != 16 && (T != 3 || W != 0)) continue;
  const AttentionDims cache{.B = 1, .T = T, .S = S, .H = 4, .KV = 2, .D = D, .window = W};
  const Inputs x(AttentionDims{.B = 1, .T = S, .S = S, .H = 4, .KV = 2, .D = D}, dtype, 71);
  auto k = test::tensor_from(dev(), kv_shape(cache), dtype, x.k);
  auto v = test::tensor_from(dev(), kv_shape(cache), dtype, x.v);
  std::vector<float> q_values(x.q.begin(), x.q.begin() + numel(q_shape(cache)));
  auto q = test::tensor_from(dev(), q_shape(cache), dtype, q_values);
  auto o = test::poisoned(dev(), q_shape(cache), dtype);
  auto past = Tensor::empty_host(dev(), {1}, DType::i32, "past");
  const float scale = default_scale(cache);
  vk::Recorder rec(dev());
  ops::attention_cached_forward(rec, o.t, q, k, v, past, scale, W);
  auto program = rec.finish();
  const size_t kv_row = size_t(cache.KV) * cache.D;
  for (uint32_t p : {0u, 1u, 17u, S - T, S - 1}) {
    upload(past, std::vector<int32_t>{int32_t(p)});
    // The cache rows not written yet (past p + T) hold NaN, as memory left by other tensors may: a masked key
    // must not reach the output (0 · NaN), so the kernels must not read them as values.
    for (const auto& [cache_tensor, values] : {std::pair{&k, &x.k}, {&v, &x.v}}) {
      Tensor* const cache_t = cache_tensor;  // (clang 14 cannot capture a structured binding in the lambda below)
      std::vector<float> poisoned = *values;
      std::fill(poisoned.begin() + long(std::min(p + T, S) * kv_row), poisoned.end(), NAN);
      const Tensor src = test::tensor_from(dev(), kv_shape(cache), dtype, poisoned);
      const Shape rows{S, uint32_t(kv_row)};
      test::run(dev(), [&](vk::Recorder& r) { ops::copy_rows(r, cache_t->reshape(rows), src.reshape(rows), past, {}); });
    }
    program.run();
    // The reference sees exactly the keys 0 .. p + T - 1 and the queries at positions p .. p + T - 1.
    AttentionDims d = cache;
    d.S = std::min(p + cache.T, S);
    d.T = d.S - p;  // queries past the cache's end are not checked
    std::vector<float> kp(x.k.begin(), x.k.begin() + d.S * kv_row), vp(x.v.begin(), x.v.begin() + d.S * kv_row);
    std::vector<float> expected(numel(q_shape(d))), lse(numel(lse_shape(d)));
    std::vector<float> qp(q_values.begin(), q_values.begin() + expected.size());
    ops::ref::attention_forward(expected, lse, qp, kp, vp, d, scale);
    auto got = download(o.t);
    got.resize(expected.size());
    const bool f16_products =
        T > 4 && dtype == DType::f16 && ops::detail::attention_flash_coopmat_fit(dev(), cache, dtype);
    check(got, expected, f16_products ? std::max(tol(dtype), kProductsTol) : tol(dtype),
          "cached o T=" + std::to_string(T) + " D=" + std::to_string(D) + " W=" + std::to_string(W) + " past=" +
              std::to_string(p), q_shape(d));
  }
  o.expect_guards_intact("cached attention o");
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AttentionCached, ::testing::Values(DType::f32, DType::f16),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// The split kernels where the combine takes its splits' weights in more than one pass (over 512 splits: a cache of
// 33,000 keys) and at the widest head (D = 256: four outputs a thread), with every key filled and with a few.
TEST_P(AttentionCached, SplitKernelsOverManySplitsAndWideHeads) {
  const DType dtype = GetParam();
  for (const auto& [D, S] : {std::pair{16u, 33000u}, {256u, 137u}}) {
    const AttentionDims cache{.B = 1, .T = 1, .S = S, .H = 2, .KV = 1, .D = D};
    const Inputs x(AttentionDims{.B = 1, .T = 1, .S = S, .H = 2, .KV = 1, .D = D}, dtype, 17);
    auto k = test::tensor_from(dev(), kv_shape(cache), dtype, x.k);
    auto v = test::tensor_from(dev(), kv_shape(cache), dtype, x.v);
    auto q = test::tensor_from(dev(), q_shape(cache), dtype, x.q);
    auto o = test::poisoned(dev(), q_shape(cache), dtype);
    auto past = Tensor::empty_host(dev(), {1}, DType::i32, "past");
    const float scale = default_scale(cache);
    vk::Recorder rec(dev());
    ops::attention_cached_forward(rec, o.t, q, k, v, past, scale);
    auto program = rec.finish();
    const size_t kv_row = size_t(cache.KV) * D;
    for (uint32_t p : {S - 1, 700u, 64u}) {
      if (p >= S) continue;
      upload(past, std::vector<int32_t>{int32_t(p)});
      program.run();
      AttentionDims d = cache;
      d.S = p + 1;
      std::vector<float> kp(x.k.begin(), x.k.begin() + d.S * kv_row), vp(x.v.begin(), x.v.begin() + d.S * kv_row);
      std::vector<float> expected(numel(q_shape(d))), lse(numel(lse_shape(d)));
      ops::ref::attention_forward(expected, lse, x.q, kp, vp, d, scale);
      check(download(o.t), expected, tol(dtype), "split o D=" + std::to_string(D) + " past=" + std::to_string(p),
            q_shape(d));
    }
    o.expect_guards_intact("split attention o");
  }
}

// Batched generation: batch row b is a sequence of its own, its query at position past[b] over its own cache's keys
// 0 .. past[b] (whatever the rows past them hold: NaN here), on the split kernels and (window 5) the row kernel.
TEST_P(AttentionCached, EachSequenceSeesItsOwnFillLevel) {
  const DType dtype = GetParam();
  const std::vector<int32_t> pasts{5, 0, 36, 17};
  for (uint32_t W : {0u, 5u})
  for (uint32_t D : {16u, 64u}) {
    const AttentionDims all{.B = 4, .T = 1, .S = 37, .H = 4, .KV = 2, .D = D, .window = W};
    const Inputs x(AttentionDims{.B = 4, .T = 37, .S = 37, .H = 4, .KV = 2, .D = D}, dtype, 91);
    const size_t kv_row = size_t(all.KV) * D, cache = size_t(all.S) * kv_row, q_row = size_t(all.H) * D;
    std::vector<float> k_poisoned = x.k, v_poisoned = x.v;
    for (uint32_t b = 0; b < all.B; ++b) {
      std::fill(k_poisoned.begin() + long(b * cache + (pasts[b] + 1) * kv_row), k_poisoned.begin() + long((b + 1) * cache), NAN);
      std::fill(v_poisoned.begin() + long(b * cache + (pasts[b] + 1) * kv_row), v_poisoned.begin() + long((b + 1) * cache), NAN);
    }
    auto k = test::tensor_from(dev(), kv_shape(all), dtype, k_poisoned);
    auto v = test::tensor_from(dev(), kv_shape(all), dtype, v_poisoned);
    std::vector<float> q_values(x.q.begin(), x.q.begin() + numel(q_shape(all)));
    auto q = test::tensor_from(dev(), q_shape(all), dtype, q_values);
    auto o = test::poisoned(dev(), q_shape(all), dtype);
    auto past = test::tensor_from_ints(dev(), {all.B}, pasts);
    const float scale = default_scale(all);
    test::run(dev(), [&](vk::Recorder& rec) { ops::attention_cached_forward(rec, o.t, q, k, v, past, scale, W, true); });
    const auto got = download(o.t);
    for (uint32_t b = 0; b < all.B; ++b) {
      AttentionDims d{.B = 1, .T = 1, .S = uint32_t(pasts[b]) + 1, .H = 4, .KV = 2, .D = D, .window = W};
      if (W >= d.S) d.window = 0;
      std::vector<float> kp(x.k.begin() + long(b * cache), x.k.begin() + long(b * cache + d.S * kv_row));
      std::vector<float> vp(x.v.begin() + long(b * cache), x.v.begin() + long(b * cache + d.S * kv_row));
      std::vector<float> qp(q_values.begin() + long(b * q_row), q_values.begin() + long((b + 1) * q_row));
      std::vector<float> expected(q_row), lse(numel(lse_shape(d)));
      ops::ref::attention_forward(expected, lse, qp, kp, vp, d, scale);
      check(std::span(got).subspan(b * q_row, q_row), expected, tol(dtype),
            "sequence " + std::to_string(b) + " D=" + std::to_string(D) + " W=" + std::to_string(W), q_shape(d));
    }
    o.expect_guards_intact("per-sequence attention o");
  }
}

TEST_F(AttentionCached, RejectsBadPast) {
  const AttentionDims d{.B = 1, .T = 2, .S = 8, .H = 2, .KV = 1, .D = 8};
  auto q = Tensor::empty(dev(), q_shape(d), DType::f32);
  auto k = Tensor::empty(dev(), kv_shape(d), DType::f32);
  auto o = Tensor::empty(dev(), q_shape(d), DType::f32);
  auto past_f = Tensor::empty(dev(), {1}, DType::f32);
  vk::Recorder rec(dev());
  try {
    ops::attention_cached_forward(rec, o, q, k, k, past_f, 0.5f);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_cached_forward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ls
