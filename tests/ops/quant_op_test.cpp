// Quantized weights on the device (ops/quant.h) against the host references (tensor/quant.h, ops/matmul.h):
// - dequantize_forward into f32 is bit-equal to ls::dequantize, into f16/bf16 bit-equal to its rounding
//   (f32_to_f16 / f32_to_bf16), for irregular shapes (blocks across row ends, a partial last block, more
//   than 256 blocks), from a row offset, and split into several dispatches past the binding limit;
// - quant_matvec_forward (M <= 4, the packed codes read directly: the pieces kernel, the 16-byte one with 1, 2
//   and 4 outputs a subgroup, and with LORASTUDIO_QMATVEC=16 the one-word kernel) matches the
//   double-accumulating reference on the dequantized weight within 1e-5 (f32 out) / 2e-3 (f16 out), with and
//   without bias and accumulation; loops over 4 rows instead of M (LORASTUDIO_ROWS_SPEC=0) change no bit of it;
// - quant_linear_forward and quant_lora_forward for many rows (dequantized into the scratch) and few rows
//   match the references the same way;
// - matmul_forward, lora_forward and matmul_backward_x with the quantized weight as operand (read packed on
//   VK_NV_cooperative_matrix2 devices, else through the scratch) match the references on the dequantized
//   weight rounded to the products' dtype.
#include "ops/quant.h"

#include <bit>
#include <cstdlib>
#include <string_view>

#include "support/testing.h"
#include "tensor/quant.h"

namespace ls {
namespace {

std::vector<float> weights(size_t n, uint32_t seed) {
  auto w = test::rounded(test::random_values(n, seed, 0.05f), DType::bf16);
  w[n / 3] = 0.7f;  // an outlier block
  return w;
}

struct Shape2 {
  uint32_t rows, cols;
};

class QuantOpTest : public test::GpuTest, public ::testing::WithParamInterface<QuantType> {
 protected:
  ops::QuantWeight upload(const QuantizedHost& q, Shape2 s) {
    if (!map_.defined()) map_ = ops::upload_dynamic_map(dev());
    return ops::upload_quantized(dev(), q, s.rows, s.cols, map_);
  }
  Tensor map_;
};

TEST_P(QuantOpTest, DequantizeIsBitEqualToTheHost) {
  const QuantType t = GetParam();
  for (Shape2 s : {Shape2{37, 72}, Shape2{131, 128}, Shape2{5, 13}}) {
    const auto w0 = weights(size_t(s.rows) * s.cols, 11);
    const QuantizedHost hq = quantize(t, w0);
    const std::vector<float> want = dequantize(hq);
    const ops::QuantWeight q = upload(hq, s);
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
      auto out = test::poisoned(dev(), {s.rows, s.cols}, d);
      const uint32_t from = s.rows / 3;  // also a part starting inside the weight
      auto part = test::poisoned(dev(), {s.rows - from, s.cols}, d);
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::dequantize_forward(rec, out.t, q);
        ops::dequantize_forward(rec, part.t, q, from);
      });
      const std::vector<float> got = download(out.t), got_part = download(part.t);
      const std::vector<float> rounded = test::rounded(want, d);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], rounded[i]) << quant_name(t) << " " << dtype_name(d) << " " << s.rows << "x" << s.cols << " @" << i;
      for (size_t i = 0; i < got_part.size(); ++i)
        ASSERT_EQ(got_part[i], rounded[size_t(from) * s.cols + i]) << quant_name(t) << " from row " << from << " @" << i;
      out.expect_guards_intact("dequantize_forward");
      part.expect_guards_intact("dequantize_forward (rows from an offset)");
    }
  }
}

TEST_P(QuantOpTest, MatvecMatchesTheReferenceOnTheDequantizedWeight) {
  const QuantType t = GetParam();
  // The pieces kernel (shaders/quant_matvec8.comp: nf4, and q8 where K is not a multiple of 64) on K a multiple of
  // 8, not of 64 (blocks cross rows; 136, 96), and of 64; 2048 with 40 rows: each column split over several
  // subgroups. q8 where K is a multiple of 64: shaders/quant_matvec16.comp with 1 output a subgroup (300 rows), 2
  // (4099: the last subgroup's second row past N) and 4 (8195: three rows of the last subgroup). With
  // LORASTUDIO_QMATVEC=16 (a second run in the suite, tests/CMakeLists.txt) nf4 takes those too, and the one-word
  // shaders/quant_matvec.comp where K is not a multiple of 64. nf4's pieces kernel with pieces of 1, 2 (the default)
  // and 4 words a lane (LORASTUDIO_NF4_WORDS; where K is not a multiple of 16 or 32 the host keeps fewer).
  for (const char* words : {"1", "2", "4"}) {
    for (const Shape2 s : {Shape2{300, 136}, Shape2{70, 96}, Shape2{300, 192}, Shape2{4099, 128}, Shape2{8195, 64},
                           Shape2{40, 2048}}) {
      if (t != QuantType::nf4 && words != std::string_view("1")) continue;
      SCOPED_TRACE(::testing::Message() << "LORASTUDIO_NF4_WORDS=" << words);
      setenv("LORASTUDIO_NF4_WORDS", words, 1);
      const auto w0 = weights(size_t(s.rows) * s.cols, 12);
      const QuantizedHost hq = quantize(t, w0);
      const std::vector<float> wd = dequantize(hq);
      const ops::QuantWeight q = upload(hq, s);
      const DType bt = ops::dequantized_dtype(dev());
      const auto b0 = test::rounded(test::random_values(s.rows, 13), bt);
      const Tensor bias = test::tensor_from(dev(), {s.rows}, bt, b0);
      for (uint32_t M : {1u, 3u, 4u})
        for (DType xt : {DType::f32, DType::f16})
          for (DType yt : {DType::f32, DType::f16}) {
            const auto x0 = test::rounded(test::random_values(size_t(M) * s.cols, 14 + M), xt);
            const auto y0 = test::rounded(test::random_values(size_t(M) * s.rows, 15), yt);
            const Tensor x = test::tensor_from(dev(), {M, s.cols}, xt, x0);
            auto y = test::poisoned(dev(), {M, s.rows}, yt);
            const Tensor acc = test::tensor_from(dev(), {M, s.rows}, yt, y0);
            test::run(dev(), [&](vk::Recorder& rec) {
              ops::quant_matvec_forward(rec, y.t, x, q, bias);
              ops::quant_matvec_forward(rec, acc, x, q, Tensor(), true);
            });
            std::vector<float> want(size_t(M) * s.rows), want_acc(want.size());
            ops::ref::matmul_forward(want, x0, wd, b0, M, s.rows, s.cols);
            ops::ref::matmul_forward(want_acc, x0, wd, {}, M, s.rows, s.cols);
            for (size_t i = 0; i < want_acc.size(); ++i) want_acc[i] += y0[i];
            const double tol = yt == DType::f32 ? 1e-5 : 2e-3;
            const std::string what =
                std::string("quant_matvec ") + quant_name(t) + " K=" + std::to_string(s.cols) + " M=" + std::to_string(M);
            test::expect_close(download(y.t), test::rounded(want, yt), tol, what, y.t.shape());
            test::expect_close(download(acc), test::rounded(want_acc, yt), tol, what + " accumulating", acc.shape());
            y.expect_guards_intact("quant_matvec_forward");
          }
      unsetenv("LORASTUDIO_NF4_WORDS");
    }
  }
}

// Loops over 4 rows whatever M (LORASTUDIO_ROWS_SPEC=0; by default they run to M) change no bit of the pieces
// kernel's products, with one column a subgroup and with QCOLS' several (a second run in the suite).
TEST_P(QuantOpTest, MatvecSwitchesChangeNoBit) {
  const QuantType t = GetParam();
  if (t != QuantType::nf4) GTEST_SKIP() << "the pieces kernel is nf4's where K is a multiple of 64";
  for (const Shape2 s : {Shape2{300, 136}, Shape2{40, 2048}}) {
    const ops::QuantWeight q = upload(quantize(t, weights(size_t(s.rows) * s.cols, 41)), s);
    for (uint32_t M : {1u, 4u})
      for (DType xt : {DType::f32, DType::f16}) {
        const Tensor x = test::tensor_from(dev(), {M, s.cols}, xt, test::random_values(size_t(M) * s.cols, 42 + M));
        auto product = [&] {  // into a fresh poisoned output: a row left unwritten shows
          auto y = test::poisoned(dev(), {M, s.rows}, DType::f32);
          test::run(dev(), [&](vk::Recorder& rec) { ops::quant_matvec_forward(rec, y.t, x, q, Tensor()); });
          return download(y.t);
        };
        const std::vector<float> plain = product();
        for (auto [name, value] : {std::pair{"LORASTUDIO_ROWS_SPEC", "0"}}) {
          SCOPED_TRACE(::testing::Message() << "K=" << s.cols << " M=" << M << " x " << dtype_name(xt) << " " << name
                                            << "=" << value);
          setenv(name, value, 1);
          const std::vector<float> switched = product();
          unsetenv(name);
          for (size_t j = 0; j < plain.size(); ++j)
            ASSERT_EQ(std::bit_cast<uint32_t>(switched[j]), std::bit_cast<uint32_t>(plain[j])) << "element " << j;
        }
      }
  }
}

// Two products with weights dequantized into the one scratch slot, recorded in a vk::Recorder::DeferScope: the
// second dequantization must not wait for, nor be refused by, the first product's held-back reduce (which reads
// only its partial sums and epilogue), and the results equal those recorded plainly, bit for bit.
TEST_P(QuantOpTest, DequantizedProductsInADeferScope) {
  const QuantType t = GetParam();
  const Shape2 s{64, 4096};  // one output tile and a long reduction: split on every device
  const uint32_t M = 64;
  const ops::QuantWeight q1 = upload(quantize(t, weights(size_t(s.rows) * s.cols, 31)), s);
  const ops::QuantWeight q2 = upload(quantize(t, weights(size_t(s.rows) * s.cols, 32)), s);
  const Tensor x = test::tensor_from(dev(), {M, s.cols}, DType::f32, test::random_values(size_t(M) * s.cols, 33));
  auto plain1 = test::poisoned(dev(), {M, s.rows}, DType::f32), plain2 = test::poisoned(dev(), {M, s.rows}, DType::f32);
  auto held1 = test::poisoned(dev(), {M, s.rows}, DType::f32), held2 = test::poisoned(dev(), {M, s.rows}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::quant_linear_forward(rec, plain1.t, x, q1, Tensor());
    ops::quant_linear_forward(rec, plain2.t, x, q2, Tensor());
  });
  test::run(dev(), [&](vk::Recorder& rec) {
    vk::Recorder::DeferScope side_by_side(rec);
    ops::quant_linear_forward(rec, held1.t, x, q1, Tensor());
    ops::quant_linear_forward(rec, held2.t, x, q2, Tensor());
  });
  EXPECT_EQ(download(held1.t), download(plain1.t));
  EXPECT_EQ(download(held2.t), download(plain2.t));
}

TEST_P(QuantOpTest, LinearAndLoraForwardForFewAndManyRows) {
  const QuantType t = GetParam();
  const Shape2 s{96, 72};
  const uint32_t r = 4;
  const float scale = 1.5f;
  const auto w0 = weights(size_t(s.rows) * s.cols, 21);
  const QuantizedHost hq = quantize(t, w0);
  const std::vector<float> w_exact = dequantize(hq);
  const std::vector<float> wd = test::rounded(w_exact, ops::dequantized_dtype(dev()));
  const ops::QuantWeight q = upload(hq, s);
  const DType bt = ops::dequantized_dtype(dev());
  const auto b0 = test::rounded(test::random_values(s.rows, 22), bt);
  const auto a0 = test::random_values(size_t(r) * s.cols, 23, 0.2f), l0 = test::random_values(size_t(s.rows) * r, 24, 0.2f);
  const Tensor bias = test::tensor_from(dev(), {s.rows}, bt, b0);
  const Tensor la = test::tensor_from(dev(), {r, s.cols}, DType::f32, a0);
  const Tensor lb = test::tensor_from(dev(), {s.rows, r}, DType::f32, l0);
  for (uint32_t M : {2u, 70u}) {  // the packed product, and the dequantized weight in the scratch
    const auto x0 = test::random_values(size_t(M) * s.cols, 25);
    const Tensor x = test::tensor_from(dev(), {M, s.cols}, DType::f32, x0);
    auto y = test::poisoned(dev(), {M, s.rows}, DType::f32);
    auto yl = test::poisoned(dev(), {M, s.rows}, DType::f32);
    const Tensor lt = Tensor::empty(dev(), {M, r}, DType::f32);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::quant_linear_forward(rec, y.t, x, q, bias);
      ops::quant_lora_forward(rec, yl.t, lt, x, q, bias, la, lb, scale);
    });
    // The packed product (M <= 4) reads the dequantized values themselves, the scratch weight their rounding.
    const std::vector<float>& w_used = M <= 4 ? w_exact : wd;
    std::vector<float> want(size_t(M) * s.rows), want_l(want.size()), want_t(size_t(M) * r);
    ops::ref::matmul_forward(want, x0, w_used, b0, M, s.rows, s.cols);
    ops::ref::lora_forward(want_l, want_t, x0, w_used, b0, a0, l0, M, s.rows, s.cols, r, scale);
    // Many rows on tensor cores round x to f16 (matmul_test's bound); the scalar path and the packed one are f32.
    const double tol = dev().coopmat() && M > 4 ? 3e-3 : 1e-5;
    test::expect_close(download(y.t), want, tol, std::string("quant_linear ") + quant_name(t), y.t.shape());
    test::expect_close(download(yl.t), want_l, tol, std::string("quant_lora ") + quant_name(t), yl.t.shape());
    test::expect_close(download(lt), want_t, tol, "quant_lora t", lt.shape());
  }
}

// The products of many rows with a quantized weight operand (ops/matmul.h WeightOperand): read packed by the
// tensor-core kernel that decodes each tile as it loads it where ops::quant_in_gemm allows (whole blocks a row,
// VK_NV_cooperative_matrix2), else through the dequantized scratch weight. Forward with bias, the LoRA forward
// (its term in the epilogue) and dx = dy·W (accumulating), at edge tiles (M = 70, N = 200) and at a long
// reduction on few tiles, which splits K (the packed kernel then starts each slice inside the weight).
TEST_P(QuantOpTest, ProductsOfManyRowsOnTheQuantizedWeight) {
  const QuantType t = GetParam();
  const uint32_t r = 4;
  const float scale = 0.75f;
  struct Case {
    uint32_t M, rows, cols;
  };
  for (const Case c : {Case{70, 200, 192}, Case{64, 128, 4096}, Case{130, 96, 320}}) {
    const auto w0 = weights(size_t(c.rows) * c.cols, 51);
    const QuantizedHost hq = quantize(t, w0);
    const DType bt = ops::dequantized_dtype(dev());
    // Both paths read the dequantized values rounded to the products' dtype (f16 on tensor cores).
    const std::vector<float> wd = test::rounded(dequantize(hq), bt);
    const ops::QuantWeight q = upload(hq, {c.rows, c.cols});
    const auto b0 = test::rounded(test::random_values(c.rows, 52), bt);
    const auto a0 = test::random_values(size_t(r) * c.cols, 53, 0.2f), l0 = test::random_values(size_t(c.rows) * r, 54, 0.2f);
    const auto x0 = test::random_values(size_t(c.M) * c.cols, 55), dy0 = test::random_values(size_t(c.M) * c.rows, 56);
    const auto dx0 = test::random_values(size_t(c.M) * c.cols, 57);
    const Tensor bias = test::tensor_from(dev(), {c.rows}, bt, b0);
    const Tensor la = test::tensor_from(dev(), {r, c.cols}, DType::f32, a0);
    const Tensor lb = test::tensor_from(dev(), {c.rows, r}, DType::f32, l0);
    const Tensor x = test::tensor_from(dev(), {c.M, c.cols}, DType::f32, x0);
    const Tensor dy = test::tensor_from(dev(), {c.M, c.rows}, DType::f32, dy0);
    const Tensor dx = test::tensor_from(dev(), {c.M, c.cols}, DType::f32, dx0);
    auto y = test::poisoned(dev(), {c.M, c.rows}, DType::f32);
    auto yl = test::poisoned(dev(), {c.M, c.rows}, DType::f32);
    const Tensor lt = Tensor::empty(dev(), {c.M, r}, DType::f32);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::matmul_forward(rec, y.t, x, q, bias);
      ops::lora_forward(rec, yl.t, lt, x, q, bias, la, lb, scale);
      ops::matmul_backward_x(rec, dx, dy, q, true);
    });
    std::vector<float> want(size_t(c.M) * c.rows), want_l(want.size()), want_t(size_t(c.M) * r);
    std::vector<float> want_dx(size_t(c.M) * c.cols);
    ops::ref::matmul_forward(want, x0, wd, b0, c.M, c.rows, c.cols);
    ops::ref::lora_forward(want_l, want_t, x0, wd, b0, a0, l0, c.M, c.rows, c.cols, r, scale);
    ops::ref::matmul_backward_x(want_dx, dy0, wd, c.M, c.rows, c.cols);
    for (size_t i = 0; i < want_dx.size(); ++i) want_dx[i] += dx0[i];
    // Tensor cores round x and dy to f16 (matmul_test's bound, relative to the largest value); the scalar path is f32.
    const double tol = dev().coopmat() ? 3e-3 : 1e-5;
    const std::string what = std::string(quant_name(t)) + " " + std::to_string(c.M) + "x" + std::to_string(c.rows) + "x" +
                             std::to_string(c.cols) + (ops::quant_in_gemm(dev().coopmat2(), c.cols) ? " packed" : " scratch");
    test::expect_close(download(y.t), want, tol, "matmul_forward " + what, y.t.shape());
    test::expect_close(download(yl.t), want_l, tol, "lora_forward " + what, yl.t.shape());
    test::expect_close(download(lt), want_t, tol, "lora_forward t " + what, lt.shape());
    test::expect_close(download(dx), want_dx, tol, "matmul_backward_x " + what, dx.shape());
    y.expect_guards_intact(("matmul_forward " + what).c_str());
    yl.expect_guards_intact(("lora_forward " + what).c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantOpTest, ::testing::Values(QuantType::nf4, QuantType::q8),
                         [](const auto& p) { return std::string(quant_name(p.param)); });

TEST(QuantSplit, DequantizeSplitsPastTheBindingLimit) {
  std::vector<std::string> messages;
  vk::DeviceOptions opts;
  opts.validation = test::validation_wanted();
  opts.on_validation_message = [&](const std::string& m) { messages.push_back(m); };
  opts.storage_range_limit = 64 * 1024;  // 64 KiB: the 300 x 136 f32 output (160 KiB) takes three dispatches
  vk::Device d(opts);
  const auto w0 = weights(300 * 136, 31);
  for (QuantType t : {QuantType::nf4, QuantType::q8}) {
    const QuantizedHost hq = quantize(t, w0);
    const Tensor map = ops::upload_dynamic_map(d);
    const ops::QuantWeight q = ops::upload_quantized(d, hq, 300, 136, map);
    const Tensor out = Tensor::empty(d, {300, 136}, DType::f32);
    vk::Recorder rec(d);
    ops::dequantize_forward(rec, out, q);
    vk::Program p = rec.finish();
    EXPECT_EQ(p.dispatch_count(), 3u) << quant_name(t);
    p.run();
    EXPECT_EQ(download(out), dequantize(hq)) << quant_name(t);
  }
  EXPECT_TRUE(messages.empty()) << messages.front();
}

TEST(QuantErrors, NamesTheOpAndTheProblem) {
  vk::Device& d = test::device();
  const QuantizedHost hq = quantize(QuantType::q8, weights(64 * 10, 41));
  const Tensor map = ops::upload_dynamic_map(d);
  test::expect_error_naming([&] { ops::upload_quantized(d, hq, 3, 64, map); }, "upload_quantized");
  const ops::QuantWeight q = ops::upload_quantized(d, hq, 10, 64, map);
  const Tensor wrong = Tensor::empty(d, {10, 60}, DType::f32);
  test::expect_error_naming([&] { test::run(d, [&](vk::Recorder& rec) { ops::dequantize_forward(rec, wrong, q); }); },
                            "dequantize_forward");
  const Tensor x = Tensor::empty(d, {5, 64}, DType::f32), y = Tensor::empty(d, {5, 10}, DType::f32);
  test::expect_error_naming([&] { test::run(d, [&](vk::Recorder& rec) { ops::quant_matvec_forward(rec, y, x, q, Tensor()); }); },
                            "at most 4 rows");
  test::expect_no_validation_messages();
}

}  // namespace
}  // namespace ls
