// Decoding's norm-fused products (ops/matvec_norm.h) against the CPU reference and against the unfused ops
// they replace (rms_norm_forward, then matmul_forward, then silu_mul / gelu_tanh_mul), on random data, for
// 1 and 3 rows, f32 and f16 activations, f32 / f16 / bf16 weights. Tolerance (rel, scaled as
// test::expect_close): f32 activations 2e-5 (the f32 sums' order); f16 activations 4e-3 against the reference
// and the unfused path (a normed value or a product on a rounding boundary goes one f16 step either way).
#include "ops/matvec_norm.h"

#include "ops/activations.h"
#include "ops/matmul.h"
#include "ops/norms.h"
#include "support/testing.h"

namespace ls {
namespace {

using Case = std::tuple<uint32_t, uint32_t, uint32_t, DType, DType>;  // M, K, N, activation, weight dtype
std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  auto [M, K, N, act, w] = c.param;
  return "m" + std::to_string(M) + "_k" + std::to_string(K) + "_n" + std::to_string(N) + "_" + dtype_name(act) + "_w" +
         dtype_name(w);
}
double tol(DType act) { return act == DType::f32 ? 2e-5 : 4e-3; }

class MatvecNormTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    auto [M, K, N, act, wt] = GetParam();
    x0 = test::random_values(size_t(M) * K, 11 + K, 3.0f);
    norm0 = test::random_values(K, 12 + K, 0.5f);
    for (float& v : norm0) v += 1.0f;  // around 1, as trained norm weights are
    norm0 = test::rounded(norm0, wt);
    wg0 = test::rounded(test::random_values(size_t(N) * K, 13 + N, 0.2f), wt);
    wu0 = test::rounded(test::random_values(size_t(N) * K, 14 + N, 0.2f), wt);
    bias0 = test::rounded(test::random_values(N, 15 + N), wt);
    x = test::tensor_from(dev(), {M, K}, DType::f32, x0);
    norm_w = test::tensor_from(dev(), {K}, wt, norm0);
    wg = test::tensor_from(dev(), {N, K}, wt, wg0);
    wu = test::tensor_from(dev(), {N, K}, wt, wu0);
    bias = test::tensor_from(dev(), {N}, wt, bias0);
  }
  static constexpr float kEps = 1e-6f;
  std::vector<float> x0, norm0, wg0, wu0, bias0;
  Tensor x, norm_w, wg, wu, bias;
};

TEST_P(MatvecNormTest, ProductMatchesReferenceAndUnfusedOps) {
  auto [M, K, N, act, wt] = GetParam();
  auto y = test::poisoned(dev(), {M, N}, act);
  ASSERT_TRUE(ops::norm_matvec_fits(y.t, x, norm_w, {wg, bias}));
  test::run(dev(), [&](vk::Recorder& rec) { ops::norm_matvec_forward(rec, y.t, x, norm_w, kEps, wg, bias); });
  const std::vector<float> got = download(y.t);
  std::vector<float> want(size_t(M) * N);
  ops::ref::norm_matvec_forward(want, x0, norm0, kEps, wg0, bias0, act == DType::f16);
  test::expect_close(got, want, tol(act), "norm_matvec_forward vs reference", {M, N});
  y.expect_guards_intact("norm_matvec_forward");

  Tensor h = Tensor::empty(dev(), {M, K}, act, "h"), rstd = Tensor::empty(dev(), {M}, DType::f32, "rstd");
  Tensor y2 = Tensor::empty(dev(), {M, N}, act, "y unfused");
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::rms_norm_forward(rec, h, rstd, x, norm_w, kEps);
    ops::matmul_forward(rec, y2, h, wg, bias);
  });
  test::expect_close(got, download(y2), tol(act), "norm_matvec_forward vs rms_norm + matmul", {M, N});
}

TEST_P(MatvecNormTest, GatedProductsMatchReferenceAndUnfusedOps) {
  auto [M, K, N, act, wt] = GetParam();
  for (ops::GluActivation f : {ops::GluActivation::silu, ops::GluActivation::gelu_tanh}) {
    const char* name = f == ops::GluActivation::silu ? "silu" : "gelu_tanh";
    SCOPED_TRACE(name);
    auto y = test::poisoned(dev(), {M, N}, act);
    ASSERT_TRUE(ops::norm_matvec_fits(y.t, x, norm_w, {wg, wu}));
    test::run(dev(), [&](vk::Recorder& rec) { ops::norm_glu_matvec_forward(rec, y.t, x, norm_w, kEps, wg, wu, f); });
    const std::vector<float> got = download(y.t);
    std::vector<float> want(size_t(M) * N);
    ops::ref::norm_glu_matvec_forward(want, x0, norm0, kEps, wg0, wu0, f, act == DType::f16);
    test::expect_close(got, want, tol(act), std::string("norm_glu_matvec_forward vs reference, ") + name, {M, N});
    y.expect_guards_intact("norm_glu_matvec_forward");

    Tensor h = Tensor::empty(dev(), {M, K}, act, "h"), rstd = Tensor::empty(dev(), {M}, DType::f32, "rstd");
    Tensor gate = Tensor::empty(dev(), {M, N}, act, "gate"), up = Tensor::empty(dev(), {M, N}, act, "up");
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::rms_norm_forward(rec, h, rstd, x, norm_w, kEps);
      ops::matmul_forward(rec, gate, h, wg, Tensor());
      ops::matmul_forward(rec, up, h, wu, Tensor());
      if (f == ops::GluActivation::silu) ops::silu_mul_forward(rec, gate, gate, up);
      else ops::gelu_tanh_mul_forward(rec, gate, gate, up);
    });
    test::expect_close(got, download(gate), tol(act), std::string("fused vs unfused, ") + name, {M, N});
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatvecNormTest,
                         ::testing::Values(Case{1, 64, 40, DType::f32, DType::f32},
                                           Case{3, 64, 40, DType::f32, DType::f32},
                                           Case{1, 896, 100, DType::f16, DType::bf16},
                                           Case{2, 896, 37, DType::f16, DType::f16},
                                           Case{1, 1024, 72, DType::f32, DType::bf16},
                                           Case{4, 2048, 33, DType::f16, DType::f32}),
                         case_name);

class MatvecNormLimits : public test::GpuTest {};

TEST_F(MatvecNormLimits, FitsOnlyWhatTheKernelTakes) {
  auto t = [&](Shape s, DType d) { return Tensor::empty(dev(), s, d, "t"); };
  const Tensor x = t({1, 64}, DType::f32), nw = t({64}, DType::f32), w = t({40, 64}, DType::f32), y = t({1, 40}, DType::f32);
  EXPECT_TRUE(ops::norm_matvec_fits(y, x, nw, {w}));
  EXPECT_FALSE(ops::norm_matvec_fits(t({5, 40}, DType::f32), t({5, 64}, DType::f32), nw, {w}));     // rows > 4
  EXPECT_FALSE(ops::norm_matvec_fits(y, t({1, 60}, DType::f32), t({60}, DType::f32), {t({40, 60}, DType::f32)}));  // K % 8
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, nw, {t({40, 64}, DType::bf16)}));                       // weight dtypes differ
  EXPECT_FALSE(ops::norm_matvec_fits(y, t({1, 64}, DType::f16), nw, {w}));                         // x not f32
  EXPECT_FALSE(ops::norm_matvec_fits(t({1, 40}, DType::f32), t({1, 8192}, DType::f32), t({8192}, DType::f32),
                                     {t({40, 8192}, DType::f32)}));  // past the staging (f32: 4096 values)
  EXPECT_TRUE(ops::norm_matvec_fits(t({1, 40}, DType::f16), t({1, 8192}, DType::f32), t({8192}, DType::f32),
                                    {t({40, 8192}, DType::f32)}));  // f16 staging holds 8192
  test::expect_error_naming(
      [&] {
        test::run(dev(), [&](vk::Recorder& rec) {
          ops::norm_matvec_forward(rec, t({5, 40}, DType::f32), t({5, 64}, DType::f32), nw, 1e-6f, w, Tensor());
        });
      },
      "norm_matvec_forward");
}

}  // namespace
}  // namespace ls
