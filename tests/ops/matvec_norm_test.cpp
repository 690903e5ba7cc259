// Decoding's norm-fused products (ops/matvec_norm.h) against the CPU reference and against the unfused ops
// they replace (rms_norm_forward, then matmul_forward, then silu_mul / gelu_tanh_mul), on random data, for
// 1 and 3 rows, f32 and f16 activations, f32 / f16 / bf16 weights; and the q, k, v pass with RoPE and the KV-cache
// write (norm_qkv_rope_forward) against the reference and the unfused ops (three norm_matvec_forward, then
// rope_kv_cache_forward), every cache row compared, rows past the cache's end left alone. Tolerance (rel, scaled as
// test::expect_close): f32 activations 2e-5 (the f32 sums' order); f16 activations 4e-3 against the reference
// and the unfused path (a normed value or a product on a rounding boundary goes one f16 step either way).
// The same products on quantized weights (nf4, q8; K a multiple of 64 or not, a column split over subgroups)
// against the reference on the dequantized weights and against rms_norm_forward + quant_matvec_forward; and the
// q, k, v pass on them against the reference and the unfused packed ops.
#include "ops/matvec_norm.h"

#include <array>
#include <bit>
#include <cstdlib>
#include <sstream>

#include "ops/activations.h"
#include "ops/matmul.h"
#include "ops/norms.h"
#include "ops/quant.h"
#include "ops/rope.h"
#include "support/testing.h"
#include "tensor/quant.h"

namespace ls {
namespace {

// M, K, N, activation, weight dtype, norm weight dtype
using Case = std::tuple<uint32_t, uint32_t, uint32_t, DType, DType, DType>;
std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  auto [M, K, N, act, w, nw] = c.param;
  return "m" + std::to_string(M) + "_k" + std::to_string(K) + "_n" + std::to_string(N) + "_" + dtype_name(act) + "_w" +
         dtype_name(w) + "_norm" + dtype_name(nw);
}
double tol(DType act) { return act == DType::f32 ? 2e-5 : 4e-3; }

class MatvecNormTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    auto [M, K, N, act, wt, nwt] = GetParam();
    x0 = test::random_values(size_t(M) * K, 11 + K, 3.0f);
    norm0 = test::random_values(K, 12 + K, 0.5f);
    for (float& v : norm0) v += 1.0f;  // around 1, as trained norm weights are
    norm0 = test::rounded(norm0, nwt);
    wg0 = test::rounded(test::random_values(size_t(N) * K, 13 + N, 0.2f), wt);
    wu0 = test::rounded(test::random_values(size_t(N) * K, 14 + N, 0.2f), wt);
    bias0 = test::rounded(test::random_values(N, 15 + N), wt);
    x = test::tensor_from(dev(), {M, K}, DType::f32, x0);
    norm_w = test::tensor_from(dev(), {K}, nwt, norm0);
    wg = test::tensor_from(dev(), {N, K}, wt, wg0);
    wu = test::tensor_from(dev(), {N, K}, wt, wu0);
    bias = test::tensor_from(dev(), {N}, wt, bias0);
  }
  static constexpr float kEps = 1e-6f;
  std::vector<float> x0, norm0, wg0, wu0, bias0;
  Tensor x, norm_w, wg, wu, bias;
};

TEST_P(MatvecNormTest, ProductMatchesReferenceAndUnfusedOps) {
  auto [M, K, N, act, wt, nwt] = GetParam();
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
  auto [M, K, N, act, wt, nwt] = GetParam();
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

// The few-row products' loads in flight a lane (LORASTUDIO_MATVEC_DEPTH, their kDepth: 2 by default) change which
// loads are issued together, not the sums or their order: the same bits at every depth, tails (K not a multiple of
// the depth's pieces) included. Checked for the plain and gated norm-fused products and for matvec8 (matmul_forward
// on a few rows, accumulating into an f32 stream as decoding's o and down do).
TEST_P(MatvecNormTest, LoadDepthChangesNoBit) {
  // (named variables, not a structured binding: clang 14, the asan preset's compiler, cannot capture those)
  const uint32_t M = std::get<0>(GetParam()), K = std::get<1>(GetParam()), N = std::get<2>(GetParam());
  const DType act = std::get<3>(GetParam());
  Tensor h = test::tensor_from(dev(), {M, K}, act, test::random_values(size_t(M) * K, 16 + K));
  const std::vector<float> stream0 = test::random_values(size_t(M) * N, 17 + N);
  auto products = [&] {  // into fresh poisoned outputs: a row left unwritten shows
    const Tensor y = test::poisoned(dev(), {M, N}, act).t, g = test::poisoned(dev(), {M, N}, act).t;
    Tensor stream = test::tensor_from(dev(), {M, N}, DType::f32, stream0);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::norm_matvec_forward(rec, y, x, norm_w, kEps, wg, bias);
      ops::norm_glu_matvec_forward(rec, g, x, norm_w, kEps, wg, wu, ops::GluActivation::silu);
      ops::matmul_forward(rec, stream, h, wg, Tensor(), true);
    });
    return std::vector<std::vector<float>>{download(y), download(g), download(stream)};
  };
  const auto by_default = products();
  // (and the loops over rows run to 4 instead of M: LORASTUDIO_ROWS_SPEC=0)
  for (auto [name, value] : {std::pair{"LORASTUDIO_MATVEC_DEPTH", "1"}, {"LORASTUDIO_MATVEC_DEPTH", "3"},
                             {"LORASTUDIO_MATVEC_DEPTH", "4"}, {"LORASTUDIO_ROWS_SPEC", "0"}}) {
    SCOPED_TRACE(::testing::Message() << name << "=" << value);
    setenv(name, value, 1);
    const auto got = products();
    unsetenv(name);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i == 0 ? "norm_matvec_forward" : i == 1 ? "norm_glu_matvec_forward" : "matmul_forward (matvec8)");
      ASSERT_EQ(got[i].size(), by_default[i].size());
      for (size_t j = 0; j < got[i].size(); ++j)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i][j]), std::bit_cast<uint32_t>(by_default[i][j])) << "element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatvecNormTest,
                         ::testing::Values(Case{1, 64, 40, DType::f32, DType::f32, DType::f32},
                                           Case{3, 64, 40, DType::f32, DType::f32, DType::f32},
                                           Case{1, 896, 100, DType::f16, DType::bf16, DType::bf16},
                                           Case{1, 896, 100, DType::f16, DType::f16, DType::bf16},  // a tensor-core GPU's bf16 model
                                           Case{2, 896, 37, DType::f16, DType::f16, DType::f16},
                                           Case{1, 1024, 72, DType::f32, DType::bf16, DType::f32},
                                           Case{4, 2048, 33, DType::f16, DType::f32, DType::f16}),
                         case_name);

// What both q, k, v pass tests check, the weights' form aside (QkvRope's plain tensors or its packed_*): the pass
// against the reference on the weights' values (w0, b0: q's, k's, v's; b0 empty where there are no biases), every
// cache row no token lands on untouched, against the unfused ops (three norm_matvec_forward, then
// rope_kv_cache_forward), and bit for bit against itself under each of `switches` ("NAME=VALUE", one at a time).
struct QkvPass {
  uint32_t M, H, KV, D, S;
  DType act;
  float theta, eps;
  std::vector<float> x0, norm0, cache0;
  std::array<std::vector<float>, 3> w0, b0;
  std::vector<int32_t> positions, offsets;
};

void check_qkv_pass(vk::Device& d, const QkvPass& c, const Tensor& x, const Tensor& norm_w, const ops::QkvRope& r,
                    std::initializer_list<std::string> switches, const std::string& what) {
  const uint32_t M = c.M, H = c.H, KV = c.KV, D = c.D, S = c.S;
  std::vector<float> got_q, got_k, got_v;
  auto run_one = [&](bool fused) {
    Tensor q = Tensor::empty(d, {1, M, H, D}, c.act, "q");
    Tensor kc = test::tensor_from(d, {1, S, KV, D}, c.act, c.cache0), vc = test::tensor_from(d, {1, S, KV, D}, c.act, c.cache0);
    ASSERT_TRUE(ops::norm_qkv_rope_fits(q, kc, vc, x, norm_w, r));
    test::run(d, [&](vk::Recorder& rec) {
      if (fused) return ops::norm_qkv_rope_forward(rec, q, kc, vc, x, norm_w, c.eps, r);
      Tensor k = Tensor::empty(d, {1, M, KV, D}, c.act, "k"), v = Tensor::empty(d, {1, M, KV, D}, c.act, "v");
      if (r.packed()) {
        ops::norm_matvec_forward(rec, q.reshape({M, H * D}), x, norm_w, c.eps, r.packed_q, r.bq);
        ops::norm_matvec_forward(rec, k.reshape({M, KV * D}), x, norm_w, c.eps, r.packed_k, r.bk);
        ops::norm_matvec_forward(rec, v.reshape({M, KV * D}), x, norm_w, c.eps, r.packed_v, r.bv);
      } else {
        ops::norm_matvec_forward(rec, q.reshape({M, H * D}), x, norm_w, c.eps, r.wq, r.bq);
        ops::norm_matvec_forward(rec, k.reshape({M, KV * D}), x, norm_w, c.eps, r.wk, r.bk);
        ops::norm_matvec_forward(rec, v.reshape({M, KV * D}), x, norm_w, c.eps, r.wv, r.bv);
      }
      ops::rope_kv_cache_forward(rec, q, k, v, kc, vc, r.positions, r.inv_freq, r.offsets, r.slot);
    });
    got_q = download(q);
    got_k = download(kc);
    got_v = download(vc);
  };
  run_one(true);
  if (::testing::Test::HasFatalFailure()) return;
  const std::vector<float> fq = got_q, fk = got_k, fv = got_v;

  const bool f16 = c.act == DType::f16;
  std::vector<float> q(size_t(M) * H * D), k(size_t(M) * KV * D), v(size_t(M) * KV * D), kc = c.cache0, vc = c.cache0;
  ops::ref::norm_matvec_forward(q, c.x0, c.norm0, c.eps, c.w0[0], c.b0[0], f16);
  ops::ref::norm_matvec_forward(k, c.x0, c.norm0, c.eps, c.w0[1], c.b0[1], f16);
  ops::ref::norm_matvec_forward(v, c.x0, c.norm0, c.eps, c.w0[2], c.b0[2], f16);
  ops::ref::rope_kv_cache_forward(q, k, v, kc, vc, c.positions, c.offsets, r.slot, D, KV, c.theta);
  const double tol = f16 ? 4e-3 : 2e-5;
  test::expect_close(fq, test::rounded(q, c.act), tol, "q vs reference" + what);
  test::expect_close(fk, test::rounded(kc, c.act), tol, "k cache vs reference" + what);
  test::expect_close(fv, test::rounded(vc, c.act), tol, "v cache vs reference" + what);
  const uint32_t row0 = uint32_t(c.offsets[size_t(r.slot)]);
  for (uint32_t row = 0; row < S; ++row) {  // rows no token lands on keep their contents
    if (row >= row0 && row < row0 + M) continue;
    for (uint32_t e = row * KV * D; e < (row + 1) * KV * D; ++e) {
      ASSERT_EQ(fk[e], c.cache0[e]) << "k cache row " << row;
      ASSERT_EQ(fv[e], c.cache0[e]) << "v cache row " << row;
    }
  }
  run_one(false);
  test::expect_close(fq, got_q, tol, "q vs the unfused ops" + what);
  test::expect_close(fk, got_k, tol, "k cache vs the unfused ops" + what);
  test::expect_close(fv, got_v, tol, "v cache vs the unfused ops" + what);
  for (const std::string& sw : switches) {  // "NAME=VALUE", or several separated by spaces
    SCOPED_TRACE(sw);
    std::vector<std::string> names;
    std::istringstream assignments(sw);
    for (std::string a; assignments >> a;) {
      names.push_back(a.substr(0, a.find('=')));
      setenv(names.back().c_str(), a.substr(a.find('=') + 1).c_str(), 1);
    }
    run_one(true);
    for (const std::string& name : names) unsetenv(name.c_str());
    for (auto [got, want] : {std::pair{&got_q, &fq}, {&got_k, &fk}, {&got_v, &fv}}) {
      ASSERT_EQ(got->size(), want->size());
      for (size_t j = 0; j < got->size(); ++j)
        ASSERT_EQ(std::bit_cast<uint32_t>((*got)[j]), std::bit_cast<uint32_t>((*want)[j])) << "element " << j;
    }
  }
}

// M tokens, activation dtype, weight dtype, biases, the cache row of token 0 (rows past 16 are skipped)
using QkvCase = std::tuple<uint32_t, DType, DType, bool, int32_t>;
std::string qkv_case_name(const ::testing::TestParamInfo<QkvCase>& c) {
  auto [M, act, wt, biases, row0] = c.param;
  return "m" + std::to_string(M) + "_" + dtype_name(act) + "_w" + dtype_name(wt) + (biases ? "_bias" : "") + "_row" +
         std::to_string(row0);
}
class NormQkvRopeTest : public test::GpuTest, public ::testing::WithParamInterface<QkvCase> {};

TEST_P(NormQkvRopeTest, MatchesReferenceAndUnfusedOps) {
  // (named variables, not a structured binding: clang 14, the asan preset's compiler, cannot capture those)
  const uint32_t M = std::get<0>(GetParam());
  const DType act = std::get<1>(GetParam()), wt = std::get<2>(GetParam());
  const bool biases = std::get<3>(GetParam());
  const int32_t row0 = std::get<4>(GetParam());
  constexpr uint32_t H = 4, KV = 2, D = 16, S = 16;
  const uint32_t K = M == 1 ? 64 : 256;  // 256: a pair's sums split over subgroups (kSplit > 1) on lavapipe too
  constexpr float kTheta = 10000.0f, kEps = 1e-6f;
  const std::vector<float> x0 = test::random_values(size_t(M) * K, 21, 3.0f);
  std::vector<float> norm0 = test::random_values(K, 22, 0.5f);
  for (float& v : norm0) v += 1.0f;
  norm0 = test::rounded(norm0, DType::bf16);
  auto weight = [&](uint32_t rows, uint32_t seed) { return test::rounded(test::random_values(size_t(rows) * K, seed, 0.2f), wt); };
  const std::vector<float> wq0 = weight(H * D, 23), wk0 = weight(KV * D, 24), wv0 = weight(KV * D, 25);
  const std::vector<float> bq0 = test::rounded(test::random_values(H * D, 26), wt),
                           bk0 = test::rounded(test::random_values(KV * D, 27), wt),
                           bv0 = test::rounded(test::random_values(KV * D, 28), wt);
  std::vector<int32_t> positions(M);
  for (uint32_t m = 0; m < M; ++m) positions[m] = 1000 + 37 * int32_t(m);  // angles past 2 pi
  const std::vector<int32_t> offsets{7, row0};
  const std::vector<float> cache0 = test::rounded(test::random_values(size_t(S) * KV * D, 29), act);

  const Tensor x = test::tensor_from(dev(), {M, K}, DType::f32, x0), norm_w = test::tensor_from(dev(), {K}, DType::bf16, norm0);
  ops::QkvRope r{.wq = test::tensor_from(dev(), {H * D, K}, wt, wq0), .wk = test::tensor_from(dev(), {KV * D, K}, wt, wk0),
                 .wv = test::tensor_from(dev(), {KV * D, K}, wt, wv0),
                 .positions = test::tensor_from_ints(dev(), {M}, positions),
                 .inv_freq = test::tensor_from(dev(), {D / 2}, DType::f32, ops::rope_inv_freq(D, kTheta)),
                 .offsets = test::tensor_from_ints(dev(), {2}, offsets), .slot = 1};
  if (biases) {
    r.bq = test::tensor_from(dev(), {H * D}, wt, bq0);
    r.bk = test::tensor_from(dev(), {KV * D}, wt, bk0);
    r.bv = test::tensor_from(dev(), {KV * D}, wt, bv0);
  }
  const std::vector<float> none;
  const QkvPass c{M, H, KV, D, S, act, kTheta, kEps, x0, norm0, cache0, {wq0, wk0, wv0},
                  {biases ? bq0 : none, biases ? bk0 : none, biases ? bv0 : none}, positions, offsets};
  // Loads in flight a lane (LORASTUDIO_MATVEC_DEPTH, or the pass's own LORASTUDIO_QKV_DEPTH) and two pairs a
  // subgroup (LORASTUDIO_QKV_PAIRS=2; where the pair's sums are split, M > 1 here, it stays at one), the loops
  // over rows run to 4 instead of M (LORASTUDIO_ROWS_SPEC=0) and workgroups of 64 or 128 (LORASTUDIO_QKV_THREADS)
  // change no bit
  check_qkv_pass(dev(), c, x, norm_w, r,
                 {"LORASTUDIO_MATVEC_DEPTH=1", "LORASTUDIO_MATVEC_DEPTH=3", "LORASTUDIO_MATVEC_DEPTH=4",
                  "LORASTUDIO_QKV_DEPTH=1", "LORASTUDIO_QKV_PAIRS=2", "LORASTUDIO_ROWS_SPEC=0",
                  "LORASTUDIO_QKV_THREADS=64", "LORASTUDIO_QKV_THREADS=128",
                  "LORASTUDIO_QKV_THREADS=128 LORASTUDIO_QKV_PAIRS=2"},
                 "");
}

INSTANTIATE_TEST_SUITE_P(Cases, NormQkvRopeTest,
                         ::testing::Values(QkvCase{1, DType::f32, DType::f32, true, 5},
                                           QkvCase{3, DType::f32, DType::bf16, false, 2},
                                           QkvCase{1, DType::f16, DType::f16, true, 9},
                                           QkvCase{3, DType::f16, DType::bf16, true, 14},  // the third token past the cache
                                           QkvCase{4, DType::f16, DType::f32, false, 0}),
                         qkv_case_name);

class MatvecNormLimits : public test::GpuTest {};

TEST_F(MatvecNormLimits, FitsOnlyWhatTheKernelTakes) {
  auto t = [&](Shape s, DType d) { return Tensor::empty(dev(), s, d, "t"); };
  const Tensor x = t({1, 64}, DType::f32), nw = t({64}, DType::f32), w = t({40, 64}, DType::f32), y = t({1, 40}, DType::f32);
  EXPECT_TRUE(ops::norm_matvec_fits(y, x, nw, {w}));
  EXPECT_FALSE(ops::norm_matvec_fits(t({5, 40}, DType::f32), t({5, 64}, DType::f32), nw, {w}));     // rows > 4
  EXPECT_FALSE(ops::norm_matvec_fits(y, t({1, 60}, DType::f32), t({60}, DType::f32), {t({40, 60}, DType::f32)}));  // K % 8
  EXPECT_TRUE(ops::norm_matvec_fits(y, x, t({64}, DType::bf16), {w}));                             // norm weight's own dtype
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, nw, {w, t({40}, DType::bf16)}));                        // bias dtype differs
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

// M, K, N, activation dtype, the weights' format, norm weight dtype
using QuantCase = std::tuple<uint32_t, uint32_t, uint32_t, DType, QuantType, DType>;
std::string quant_case_name(const ::testing::TestParamInfo<QuantCase>& c) {
  auto [M, K, N, act, q, nw] = c.param;
  return "m" + std::to_string(M) + "_k" + std::to_string(K) + "_n" + std::to_string(N) + "_" + dtype_name(act) + "_" +
         quant_name(q) + "_norm" + dtype_name(nw);
}
class QuantMatvecNormTest : public test::GpuTest, public ::testing::WithParamInterface<QuantCase> {};

TEST_P(QuantMatvecNormTest, MatchesReferenceOnTheDequantizedWeightsAndUnfusedOps) {
  auto [M, K, N, act, qt, nwt] = GetParam();
  constexpr float kEps = 1e-6f;
  const auto x0 = test::random_values(size_t(M) * K, 21 + K, 3.0f);
  auto norm0 = test::random_values(K, 22 + K, 0.5f);
  for (float& v : norm0) v += 1.0f;
  norm0 = test::rounded(norm0, nwt);
  const DType bt = ops::dequantized_dtype(dev());  // a quantized layer's bias, as the model keeps it
  const auto bias0 = test::rounded(test::random_values(N, 23 + N), bt);
  auto wg_host = test::rounded(test::random_values(size_t(N) * K, 24 + N, 0.2f), DType::bf16);
  wg_host[wg_host.size() / 3] = 2.5f;  // an outlier block
  const QuantizedHost hg = quantize(qt, wg_host), hu = quantize(qt, test::random_values(size_t(N) * K, 25 + N, 0.2f));
  const std::vector<float> wg0 = dequantize(hg), wu0 = dequantize(hu);
  const Tensor map = ops::upload_dynamic_map(dev());
  const ops::QuantWeight wg = ops::upload_quantized(dev(), hg, N, K, map), wu = ops::upload_quantized(dev(), hu, N, K, map);
  const Tensor x = test::tensor_from(dev(), {M, K}, DType::f32, x0), norm_w = test::tensor_from(dev(), {K}, nwt, norm0);
  const Tensor bias = test::tensor_from(dev(), {N}, bt, bias0);
  const std::string what = std::string(quant_name(qt)) + " M=" + std::to_string(M) + " K=" + std::to_string(K);

  auto y = test::poisoned(dev(), {M, N}, act);
  auto gated = test::poisoned(dev(), {M, N}, act);
  ASSERT_TRUE(ops::norm_matvec_fits(y.t, x, norm_w, {&wg}, bias));
  ASSERT_TRUE(ops::norm_matvec_fits(gated.t, x, norm_w, {&wg, &wu}));
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::norm_matvec_forward(rec, y.t, x, norm_w, kEps, wg, bias);
    ops::norm_glu_matvec_forward(rec, gated.t, x, norm_w, kEps, wg, wu, ops::GluActivation::silu);
  });
  const std::vector<float> got = download(y.t), got_gated = download(gated.t);
  std::vector<float> want(size_t(M) * N), want_gated(want.size());
  ops::ref::norm_matvec_forward(want, x0, norm0, kEps, wg0, bias0, act == DType::f16);
  ops::ref::norm_glu_matvec_forward(want_gated, x0, norm0, kEps, wg0, wu0, ops::GluActivation::silu, act == DType::f16);
  test::expect_close(got, want, tol(act), "quantized norm_matvec_forward vs reference, " + what, {M, N});
  test::expect_close(got_gated, want_gated, tol(act), "quantized norm_glu_matvec_forward vs reference, " + what, {M, N});
  y.expect_guards_intact("quantized norm_matvec_forward");
  gated.expect_guards_intact("quantized norm_glu_matvec_forward");

  Tensor h = Tensor::empty(dev(), {M, K}, act, "h"), rstd = Tensor::empty(dev(), {M}, DType::f32, "rstd");
  Tensor y2 = Tensor::empty(dev(), {M, N}, act, "y unfused");
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::rms_norm_forward(rec, h, rstd, x, norm_w, kEps);
    ops::quant_matvec_forward(rec, y2, h, wg, bias);
  });
  test::expect_close(got, download(y2), tol(act), "quantized norm_matvec_forward vs rms_norm + quant_matvec, " + what,
                     {M, N});
  // Pieces in flight a lane, workgroups that loop over column groups (on lavapipe one workgroup takes them all;
  // 0: one a group, the default where the SM count is unknown, else 8 an SM) and row loops run to 4 instead of M
  // change no bit.
  for (auto [name, value] : {std::pair{"LORASTUDIO_QMATVEC_PIECES", "1"}, {"LORASTUDIO_QMATVEC_PIECES", "5"},
                             {"LORASTUDIO_QMATVEC_WAVES", "0"}, {"LORASTUDIO_QMATVEC_WAVES", "1"},
                             {"LORASTUDIO_QMATVEC_WAVES", "3"}, {"LORASTUDIO_ROWS_SPEC", "0"}}) {
    SCOPED_TRACE(::testing::Message() << name << "=" << value);
    setenv(name, value, 1);
    const auto y_now = test::poisoned(dev(), {M, N}, act), gated_now = test::poisoned(dev(), {M, N}, act);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::norm_matvec_forward(rec, y_now.t, x, norm_w, kEps, wg, bias);
      ops::norm_glu_matvec_forward(rec, gated_now.t, x, norm_w, kEps, wg, wu, ops::GluActivation::silu);
    });
    unsetenv(name);
    for (auto [now, before] : {std::pair{download(y_now.t), got}, {download(gated_now.t), got_gated}})
      for (size_t j = 0; j < now.size(); ++j)
        ASSERT_EQ(std::bit_cast<uint32_t>(now[j]), std::bit_cast<uint32_t>(before[j])) << "element " << j;
  }
  // nf4 pieces of 2 and 4 words a lane (LORASTUDIO_NF4_NORM_WORDS; x̂ staged permuted) sum in another order: against
  // the reference. Where K is not a multiple of 16 the host keeps one word, and the bits.
  for (const char* words : {"2", "4"}) {
    SCOPED_TRACE(::testing::Message() << "LORASTUDIO_NF4_NORM_WORDS=" << words);
    setenv("LORASTUDIO_NF4_NORM_WORDS", words, 1);
    const auto y_now = test::poisoned(dev(), {M, N}, act), gated_now = test::poisoned(dev(), {M, N}, act);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::norm_matvec_forward(rec, y_now.t, x, norm_w, kEps, wg, bias);
      ops::norm_glu_matvec_forward(rec, gated_now.t, x, norm_w, kEps, wg, wu, ops::GluActivation::silu);
    });
    unsetenv("LORASTUDIO_NF4_NORM_WORDS");
    const std::vector<float> now = download(y_now.t), now_gated = download(gated_now.t);
    test::expect_close(now, want, tol(act), "quantized norm_matvec_forward vs reference, " + what, {M, N});
    test::expect_close(now_gated, want_gated, tol(act), "quantized norm_glu_matvec_forward vs reference, " + what,
                       {M, N});
    y_now.expect_guards_intact("quantized norm_matvec_forward");
    gated_now.expect_guards_intact("quantized norm_glu_matvec_forward");
    if (qt != QuantType::nf4 || K % 16 != 0) {
      for (auto [a, b] : {std::pair{&now, &got}, {&now_gated, &got_gated}}) {
        for (size_t j = 0; j < a->size(); ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>((*a)[j]), std::bit_cast<uint32_t>((*b)[j])) << "element " << j;
      }
    }
  }
}

TEST(QuantMatvecNormFits, RefusesMixedFormatsAndShapes) {
  vk::Device& d = test::device();
  const Tensor map = ops::upload_dynamic_map(d);
  const auto w0 = test::random_values(64 * 40, 31, 0.2f);
  const ops::QuantWeight nf4 = ops::upload_quantized(d, quantize(QuantType::nf4, w0), 40, 64, map);
  const ops::QuantWeight q8 = ops::upload_quantized(d, quantize(QuantType::q8, w0), 40, 64, map);
  const ops::QuantWeight wide = ops::upload_quantized(d, quantize(QuantType::nf4, w0), 20, 128, map);
  const Tensor x = Tensor::empty(d, {1, 64}, DType::f32, "x"), norm_w = Tensor::empty(d, {64}, DType::f32, "norm");
  const Tensor y = Tensor::empty(d, {1, 40}, DType::f32, "y");
  EXPECT_TRUE(ops::norm_matvec_fits(y, x, norm_w, {&nf4, &nf4}));
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, norm_w, {&nf4, &q8}));
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, norm_w, {&wide}));
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, norm_w, {&nf4}, Tensor::empty(d, {41}, DType::f32, "bias")));
  EXPECT_FALSE(ops::norm_matvec_fits(y, x, norm_w, {&nf4}, Tensor::empty(d, {40}, DType::bf16, "bias")));
}

// The q, k, v pass on packed weights (QkvRope::packed_*): M tokens, K, activation dtype, the format, biases, the
// cache row of token 0. Against the reference on the dequantized weights, the unfused packed ops (three quantized
// norm_matvec_forward, then rope_kv_cache_forward), and itself at every depth (bit for bit).
using PackedQkvCase = std::tuple<uint32_t, uint32_t, DType, QuantType, bool, int32_t>;
std::string packed_qkv_case_name(const ::testing::TestParamInfo<PackedQkvCase>& c) {
  auto [M, K, act, qt, biases, row0] = c.param;
  return "m" + std::to_string(M) + "_k" + std::to_string(K) + "_" + dtype_name(act) + "_" + quant_name(qt) +
         (biases ? "_bias" : "") + "_row" + std::to_string(row0);
}
class PackedQkvRopeTest : public test::GpuTest, public ::testing::WithParamInterface<PackedQkvCase> {};

TEST_P(PackedQkvRopeTest, MatchesReferenceUnfusedOpsAndEveryDepth) {
  // (named variables, not a structured binding: clang 14 cannot capture those)
  const uint32_t M = std::get<0>(GetParam()), K = std::get<1>(GetParam());
  const DType act = std::get<2>(GetParam());
  const QuantType qt = std::get<3>(GetParam());
  const bool biases = std::get<4>(GetParam());
  const int32_t row0 = std::get<5>(GetParam());
  constexpr uint32_t H = 4, KV = 2, D = 16, S = 16;
  constexpr float kTheta = 1000000.0f, kEps = 1e-6f;
  const std::vector<float> x0 = test::random_values(size_t(M) * K, 41 + K, 3.0f);
  std::vector<float> norm0 = test::random_values(K, 42, 0.5f);
  for (float& v : norm0) v += 1.0f;
  norm0 = test::rounded(norm0, DType::bf16);
  const Tensor map = ops::upload_dynamic_map(dev());
  std::vector<float> w0[3];  // dequantized q, k, v weights
  ops::QuantWeight packed[3];
  const uint32_t rows[3] = {H * D, KV * D, KV * D};
  for (uint32_t i = 0; i < 3; ++i) {
    auto host = test::rounded(test::random_values(size_t(rows[i]) * K, 43 + i, 0.2f), DType::bf16);
    host[host.size() / 2 + 1] = -3.0f;  // an outlier block
    const QuantizedHost h = quantize(qt, host);
    w0[i] = dequantize(h);
    packed[i] = ops::upload_quantized(dev(), h, rows[i], K, map);
  }
  const DType bt = ops::dequantized_dtype(dev());  // a quantized layer's bias, as the model keeps it
  std::vector<float> b0[3];
  for (uint32_t i = 0; i < 3; ++i) b0[i] = test::rounded(test::random_values(rows[i], 46 + i), bt);
  std::vector<int32_t> positions(M);
  for (uint32_t m = 0; m < M; ++m) positions[m] = 500 + 29 * int32_t(m);
  const std::vector<int32_t> offsets{3, row0};
  const std::vector<float> cache0 = test::rounded(test::random_values(size_t(S) * KV * D, 49), act);

  const Tensor x = test::tensor_from(dev(), {M, K}, DType::f32, x0), norm_w = test::tensor_from(dev(), {K}, DType::bf16, norm0);
  ops::QkvRope r{.positions = test::tensor_from_ints(dev(), {M}, positions),
                 .inv_freq = test::tensor_from(dev(), {D / 2}, DType::f32, ops::rope_inv_freq(D, kTheta)),
                 .offsets = test::tensor_from_ints(dev(), {2}, offsets), .slot = 1,
                 .packed_q = packed[0], .packed_k = packed[1], .packed_v = packed[2]};
  if (biases) {
    r.bq = test::tensor_from(dev(), {H * D}, bt, b0[0]);
    r.bk = test::tensor_from(dev(), {KV * D}, bt, b0[1]);
    r.bv = test::tensor_from(dev(), {KV * D}, bt, b0[2]);
  }
  const std::vector<float> none;
  const QkvPass c{M, H, KV, D, S, act, kTheta, kEps, x0, norm0, cache0, {w0[0], w0[1], w0[2]},
                  {biases ? b0[0] : none, biases ? b0[1] : none, biases ? b0[2] : none}, positions, offsets};
  const std::string what = std::string(", ") + quant_name(qt) + " M=" + std::to_string(M) + " K=" + std::to_string(K);
  // pieces in flight a lane, two pairs a subgroup, row loops to 4 instead of M, workgroups of 64 or 128
  check_qkv_pass(dev(), c, x, norm_w, r,
                 {"LORASTUDIO_QKV_DEPTH=1", "LORASTUDIO_QKV_DEPTH=2", "LORASTUDIO_QKV_DEPTH=3", "LORASTUDIO_QKV_DEPTH=8",
                  "LORASTUDIO_QKV_PAIRS=2", "LORASTUDIO_ROWS_SPEC=0", "LORASTUDIO_ROWS_SPEC=0 LORASTUDIO_QKV_DEPTH=2",
                  "LORASTUDIO_QKV_THREADS=64", "LORASTUDIO_QKV_THREADS=128"},
                 what);
}

INSTANTIATE_TEST_SUITE_P(Cases, PackedQkvRopeTest,
                         ::testing::Values(PackedQkvCase{1, 64, DType::f32, QuantType::nf4, true, 5},
                                           PackedQkvCase{3, 72, DType::f32, QuantType::q8, false, 2},  // blocks across rows
                                           PackedQkvCase{1, 896, DType::f16, QuantType::nf4, true, 9},
                                           PackedQkvCase{3, 256, DType::f16, QuantType::nf4, false, 14},  // past the cache
                                           PackedQkvCase{2, 512, DType::f16, QuantType::q8, true, 0}),
                         packed_qkv_case_name);

TEST(PackedQkvRopeFits, RefusesMixedFormsAndShapes) {
  vk::Device& d = test::device();
  const Tensor map = ops::upload_dynamic_map(d);
  auto up = [&](QuantType qt, uint32_t rows) {
    return ops::upload_quantized(d, quantize(qt, test::random_values(size_t(rows) * 64, 51 + rows, 0.2f)), rows, 64, map);
  };
  const Tensor x = Tensor::empty(d, {1, 64}, DType::f32, "x"), norm_w = Tensor::empty(d, {64}, DType::f32, "norm");
  const Tensor q = Tensor::empty(d, {1, 1, 4, 16}, DType::f32, "q"), kc = Tensor::empty(d, {1, 8, 2, 16}, DType::f32, "k cache");
  ops::QkvRope r{.positions = Tensor::empty(d, {1}, DType::i32, "positions"),
                 .inv_freq = Tensor::empty(d, {8}, DType::f32, "inv_freq"),
                 .offsets = Tensor::empty(d, {2}, DType::i32, "offsets"), .slot = 1,
                 .packed_q = up(QuantType::nf4, 64), .packed_k = up(QuantType::nf4, 32), .packed_v = up(QuantType::nf4, 32)};
  EXPECT_TRUE(ops::norm_qkv_rope_fits(q, kc, kc, x, norm_w, r));
  ops::QkvRope mixed = r;
  mixed.packed_v = up(QuantType::q8, 32);
  EXPECT_FALSE(ops::norm_qkv_rope_fits(q, kc, kc, x, norm_w, mixed));  // formats differ
  ops::QkvRope half_plain = r;
  half_plain.packed_k = ops::QuantWeight();
  half_plain.wk = Tensor::empty(d, {32, 64}, DType::f16, "wk");
  EXPECT_FALSE(ops::norm_qkv_rope_fits(q, kc, kc, x, norm_w, half_plain));  // one weight plain
  ops::QkvRope short_k = r;
  short_k.packed_k = up(QuantType::nf4, 16);
  EXPECT_FALSE(ops::norm_qkv_rope_fits(q, kc, kc, x, norm_w, short_k));  // k's rows are not KV·D
  ops::QkvRope one_bias = r;
  one_bias.bq = Tensor::empty(d, {64}, DType::f32, "bq");
  EXPECT_FALSE(ops::norm_qkv_rope_fits(q, kc, kc, x, norm_w, one_bias));  // biases all or none
}

INSTANTIATE_TEST_SUITE_P(Shapes, QuantMatvecNormTest,
                         ::testing::Values(QuantCase{1, 64, 40, DType::f32, QuantType::nf4, DType::f32},
                                           QuantCase{3, 192, 37, DType::f32, QuantType::q8, DType::f32},
                                           QuantCase{1, 72, 50, DType::f32, QuantType::nf4, DType::f32},
                                           QuantCase{2, 896, 100, DType::f16, QuantType::nf4, DType::bf16},
                                           QuantCase{1, 2048, 33, DType::f16, QuantType::q8, DType::f16},
                                           QuantCase{4, 1024, 72, DType::f32, QuantType::nf4, DType::f16}),
                         quant_case_name);

}  // namespace
}  // namespace ls
