// adamw_step, grad_sumsq, clip_scale and fill_zero against their references, programs recorded once and
// replayed over several steps (moments carried, new gradients and hyper values uploaded between runs).
// Tolerance (rel, test::expect_close): adamw_step's param, m, v 1e-6 against the f32 reference (the same
// operations in the same order; a device's sqrt and division may be an ulp or two off IEEE, and Vulkan
// lets fma round twice: lavapipe measured 1.0e-7 on m, 6e-8 on param, 0 on v); grad_sumsq 1e-6 against
// the exact sum in double (lavapipe: 0); clip_scale's factor and norm 1e-6; fill_zero exact. Against
// torch 2.11 (tests/fixtures/adamw_reference.json, when present): params 1e-6 (measured 4.5e-8), exp_avg
// 1e-6 (2.8e-7), exp_avg_sq 3e-5 (1.31e-5: we form 1 - beta2 in f32 on the device, 1.3e-5 relative from
// torch's double for beta2 = 0.999), the gradient norm 1e-6 (9.9e-8).
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ops/optimizer.h"
#include "support/testing.h"
#include "train/schedule.h"

namespace ls {
namespace {

using Hyper = std::array<float, ops::kHyperSlots>;

void record(const char* what, double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  ::testing::Test::RecordProperty(what, text);
}
// Compares and records the worst relative error (by max |expected|) under `what`.
void check(const char* what, std::span<const float> actual, std::span<const float> expected, double rtol,
           const Shape& shape = {}) {
  test::expect_close(actual, expected, rtol, what, shape);
  record(what, test::compare(actual, expected).max_rel);
}

using test::expect_error_naming;

// The hyper buffer as train::hyper_values fills it, with a given clip factor.
Hyper hyper_for(uint32_t t, float lr, float beta1, float beta2, float weight_decay, float clip) {
  return {lr,
          beta1,
          beta2,
          1e-8f,
          weight_decay,
          float(1 - std::pow(double(beta1), double(t))),
          float(1 - std::pow(double(beta2), double(t))),
          clip};
}

Tensor zeros(vk::Device& dev, Shape shape) {
  uint64_t n = 1;
  for (uint32_t d : shape) n *= d;
  return test::tensor_from(dev, std::move(shape), DType::f32, std::vector<float>(n, 0.0f));
}

class AdamwTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<uint32_t, float>> {};

// Five steps of one recorded program: gradients of growing scale, lr changing, clip factor != 1 on step 3.
TEST_P(AdamwTest, StepsMatchReference) {
  auto [n, weight_decay] = GetParam();
  std::vector<float> p = test::random_values(n, 1 + n), m(n, 0.0f), v(n, 0.0f);
  Tensor param = test::tensor_from(dev(), {n}, DType::f32, p);
  Tensor grad = Tensor::empty(dev(), {n}, DType::f32, "grad");
  Tensor dm = zeros(dev(), {n}), dv = zeros(dev(), {n});
  Tensor hyper = Tensor::empty_host(dev(), {ops::kHyperSlots}, DType::f32, "hyper");
  vk::Recorder rec(dev());
  ops::adamw_step(rec, param, grad, dm, dv, hyper);
  vk::Program program = rec.finish();
  for (uint32_t t = 1; t <= 5; ++t) {
    auto g = test::random_values(n, 100 * t + n, 0.1f * float(t));
    Hyper h = hyper_for(t, 1e-3f * float(6 - t), 0.9f, 0.999f, weight_decay, t == 3 ? 0.37f : 1.0f);
    upload(grad, g);
    upload(hyper, h);
    program.run();
    ops::ref::adamw_step(p, g, m, v, h);
    const std::string step = " step " + std::to_string(t);
    test::expect_close(download(param), p, 1e-6, "param" + step, {n});
    test::expect_close(download(dm), m, 1e-6, "m" + step, {n});
    test::expect_close(download(dv), v, 1e-6, "v" + step, {n});
  }
  record("param_max_rel", test::compare(download(param), p).max_rel);
  record("m_max_rel", test::compare(download(dm), m).max_rel);
  record("v_max_rel", test::compare(download(dv), v).max_rel);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AdamwTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u, 129u, 4864u, 100003u),
                                            ::testing::Values(0.0f, 0.01f)));

// beta1 < 0.5 takes lerp's other form (end - (end - start) * (1 - w)); moments start non-zero.
TEST_F(AdamwTest, SmallBeta1AndNonZeroMoments) {
  const uint32_t n = 129;
  std::vector<float> p = test::random_values(n, 5), m = test::random_values(n, 6, 0.1f), v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = 0.01f + 0.001f * float(i % 7);
  Tensor param = test::tensor_from(dev(), {n}, DType::f32, p);
  Tensor dm = test::tensor_from(dev(), {n}, DType::f32, m), dv = test::tensor_from(dev(), {n}, DType::f32, v);
  auto g = test::random_values(n, 7);
  Tensor grad = test::tensor_from(dev(), {n}, DType::f32, g);
  Hyper h = hyper_for(4, 3e-3f, 0.2f, 0.95f, 0.1f, 0.8f);
  Tensor hyper = test::tensor_from(dev(), {ops::kHyperSlots}, DType::f32, h);
  test::run(dev(), [&](vk::Recorder& rec) { ops::adamw_step(rec, param, grad, dm, dv, hyper); });
  ops::ref::adamw_step(p, g, m, v, h);
  check("small_beta1_param", download(param), p, 1e-6, {n});
  check("small_beta1_m", download(dm), m, 1e-6, {n});
  check("small_beta1_v", download(dv), v, 1e-6, {n});
}

class GradSumsqTest : public test::GpuTest {
 protected:
  // Uploads one tensor per size (values of differing scales), runs grad_sumsq twice from one program,
  // and checks the sum against the reference and the two runs against each other bit for bit.
  void check_sizes(const std::vector<uint32_t>& sizes, const char* what) {
    std::vector<std::vector<float>> values;
    std::vector<Tensor> grads;
    for (size_t i = 0; i < sizes.size(); ++i) {
      values.push_back(test::random_values(sizes[i], uint32_t(40 + i), 0.01f * float(1 + i % 5)));
      grads.push_back(test::tensor_from(dev(), {sizes[i]}, DType::f32, values.back()));
    }
    Tensor sumsq = Tensor::empty(dev(), {1}, DType::f32, "sumsq");
    vk::Recorder rec(dev());
    ops::grad_sumsq(rec, sumsq, grads);
    vk::Program program = rec.finish();
    // Partial sums need no barrier between them; one before the final sum.
    EXPECT_EQ(program.barrier_count(), 1u);
    EXPECT_EQ(program.dispatch_count(), (sizes.size() + 6) / 7 + 1);
    program.run();
    const float first = download(sumsq)[0];
    program.run();
    const float second = download(sumsq)[0];
    EXPECT_EQ(std::bit_cast<uint32_t>(first), std::bit_cast<uint32_t>(second)) << "not deterministic";
    std::vector<std::span<const float>> spans(values.begin(), values.end());
    const float want = float(ops::ref::grad_sumsq(spans));
    check(what, std::vector<float>{first}, std::vector<float>{want}, 1e-6);
  }
};

TEST_F(GradSumsqTest, SevenTensorsOfOddSizes) { check_sizes({1, 7, 33, 129, 896, 4099, 10007}, "sumsq_7_rel"); }

// 22 tensors (4 dispatches), one of them long enough to be cut into the most partial sums a tensor gets
// (1024) with several elements per thread past that.
TEST_F(GradSumsqTest, ManyTensorsAndALongOne) {
  std::vector<uint32_t> sizes;
  for (uint32_t i = 0; i < 21; ++i) sizes.push_back(1 + (i * 337) % 5000);
  sizes.insert(sizes.begin() + 9, 4096u * 1024u * 2u + 3u);
  check_sizes(sizes, "sumsq_22_rel");
}

class ClipScaleTest : public test::GpuTest {};

TEST_F(ClipScaleTest, MatchesTorchFormula) {
  struct Case {
    float sumsq, max_norm;
  };
  // Above the limit, below it, at it (torch scales by max / (max + 1e-6) there), clipping off, large.
  const Case cases[] = {{4.0f, 1.0f}, {0.25f, 1.0f}, {1.0f, 1.0f}, {9.0f, 0.0f}, {12345.6f, 2.5f}};
  for (const Case& c : cases) {
    Hyper h = hyper_for(2, 1e-3f, 0.9f, 0.999f, 0.0f, -7.0f);  // the slot to be overwritten holds junk
    Tensor hyper = test::tensor_from(dev(), {ops::kHyperSlots}, DType::f32, h);
    Tensor sumsq = test::tensor_from(dev(), {1}, DType::f32, std::vector<float>{c.sumsq});
    auto norm = test::poisoned(dev(), {1}, DType::f32);
    test::run(dev(), [&](vk::Recorder& rec) { ops::clip_scale(rec, hyper, norm.t, sumsq, c.max_norm); });
    Hyper want = h;
    const float want_norm = ops::ref::clip_scale(want, c.sumsq, c.max_norm);
    const std::string what = "sumsq " + std::to_string(c.sumsq) + " max_norm " + std::to_string(c.max_norm);
    test::expect_close(download(hyper), want, 1e-6, "hyper, " + what);
    test::expect_close(download(norm.t), std::vector<float>{want_norm}, 1e-6, "norm, " + what);
    norm.expect_guards_intact("norm");
  }
  Hyper h{};
  EXPECT_NEAR(ops::ref::clip_scale(h, 4.0f, 1.0f), 2.0f, 0.0f);
  EXPECT_NEAR(h[7], 0.5f, 1e-6f);
  ops::ref::clip_scale(h, 0.25f, 1.0f);
  EXPECT_EQ(h[7], 1.0f);
  ops::ref::clip_scale(h, 1.0f, 1.0f);
  EXPECT_LT(h[7], 1.0f);  // torch's clamp(max / (norm + 1e-6), max=1), not `norm > max ? ... : 1`
}

// The optimizer step as the trainer records it: sum of squares, clip factor, AdamW on each tensor, for
// five steps with the gradient norm above max_norm on some steps and below on others.
TEST_F(ClipScaleTest, FullStepMatchesReference) {
  const std::vector<Shape> shapes = {{4, 33}, {17}, {1}, {8, 129}};
  const float max_norm = 1.0f;
  std::vector<std::vector<float>> p, m, v;
  std::vector<Tensor> params, grads, ms, vs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    uint32_t n = 1;
    for (uint32_t d : shapes[i]) n *= d;
    p.push_back(test::random_values(n, uint32_t(70 + i)));
    m.emplace_back(n, 0.0f);
    v.emplace_back(n, 0.0f);
    params.push_back(test::tensor_from(dev(), shapes[i], DType::f32, p.back()));
    grads.push_back(Tensor::empty(dev(), shapes[i], DType::f32, "grad"));
    ms.push_back(zeros(dev(), shapes[i]));
    vs.push_back(zeros(dev(), shapes[i]));
  }
  Tensor hyper = Tensor::empty_host(dev(), {ops::kHyperSlots}, DType::f32, "hyper");
  Tensor sumsq = Tensor::empty(dev(), {1}, DType::f32, "sumsq"), norm = Tensor::empty(dev(), {1}, DType::f32, "norm");
  vk::Recorder rec(dev());
  ops::grad_sumsq(rec, sumsq, grads);
  ops::clip_scale(rec, hyper, norm, sumsq, max_norm);
  for (size_t i = 0; i < shapes.size(); ++i) ops::adamw_step(rec, params[i], grads[i], ms[i], vs[i], hyper);
  vk::Program program = rec.finish();
  const float scales[] = {0.5f, 0.01f, 0.2f, 0.02f, 1.0f};
  for (uint32_t t = 1; t <= 5; ++t) {
    std::vector<std::vector<float>> g;
    for (size_t i = 0; i < shapes.size(); ++i) {
      g.push_back(test::random_values(p[i].size(), uint32_t(1000 * t + i), scales[t - 1]));
      upload(grads[i], g.back());
    }
    Hyper h = hyper_for(t, 1e-3f, 0.9f, 0.999f, 0.01f, 1.0f);
    upload(hyper, h);
    program.run();
    std::vector<std::span<const float>> spans(g.begin(), g.end());
    const float want_norm = ops::ref::clip_scale(h, float(ops::ref::grad_sumsq(spans)), max_norm);
    const std::string step = " step " + std::to_string(t);
    test::expect_close(download(norm), std::vector<float>{want_norm}, 1e-6, "norm" + step);
    test::expect_close(download(hyper), h, 1e-6, "hyper" + step);
    for (size_t i = 0; i < shapes.size(); ++i) {
      ops::ref::adamw_step(p[i], g[i], m[i], v[i], h);
      test::expect_close(download(params[i]), p[i], 1e-6, "param " + std::to_string(i) + step, shapes[i]);
    }
    if (t == 1) {
      EXPECT_LT(h[7], 1.0f) << "step 1 should clip";
    }
    if (t == 2) {
      EXPECT_EQ(h[7], 1.0f) << "step 2 should not clip";
    }
  }
}

// A NaN or infinite gradient (one element of one tensor), with clipping on and off: the norm comes out
// non-finite, clip_scale writes its marker -1, and AdamW leaves every parameter and both moments exactly as
// they were, on the device and in the reference.
TEST_F(ClipScaleTest, NonFiniteGradientLeavesEverythingUnchanged) {
  const uint32_t n = 300;
  for (float bad : {std::nanf(""), INFINITY, -INFINITY})
    for (float max_norm : {1.0f, 0.0f}) {
      std::vector<float> p0 = test::random_values(n, 5), m0 = test::random_values(n, 6, 0.1f),
                         v0 = test::random_values(n, 7, 0.01f), g = test::random_values(n, 8);
      for (float& x : v0) x = std::fabs(x);
      g[123] = bad;
      Tensor param = test::tensor_from(dev(), {n}, DType::f32, p0), grad = test::tensor_from(dev(), {n}, DType::f32, g);
      Tensor m = test::tensor_from(dev(), {n}, DType::f32, m0), v = test::tensor_from(dev(), {n}, DType::f32, v0);
      Tensor hyper = test::tensor_from(dev(), {ops::kHyperSlots}, DType::f32, hyper_for(3, 1e-3f, 0.9f, 0.999f, 0.01f, 1.0f));
      Tensor sumsq = Tensor::empty(dev(), {1}, DType::f32, "sumsq"), norm = Tensor::empty(dev(), {1}, DType::f32, "norm");
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::grad_sumsq(rec, sumsq, std::vector<Tensor>{grad});
        ops::clip_scale(rec, hyper, norm, sumsq, max_norm);
        ops::adamw_step(rec, param, grad, m, v, hyper);
      });
      const std::string what = "gradient " + std::to_string(bad) + ", max_norm " + std::to_string(max_norm);
      EXPECT_FALSE(std::isfinite(download(norm)[0])) << what;
      EXPECT_EQ(download(hyper)[7], -1.0f) << what;
      EXPECT_EQ(download(param), p0) << what;
      EXPECT_EQ(download(m), m0) << what;
      EXPECT_EQ(download(v), v0) << what;
      Hyper h = hyper_for(3, 1e-3f, 0.9f, 0.999f, 0.01f, 1.0f);
      ops::ref::clip_scale(h, float(ops::ref::grad_sumsq(std::vector<std::span<const float>>{g})), max_norm);
      EXPECT_EQ(h[7], -1.0f) << what;
      auto p = p0, mr = m0, vr = v0;
      ops::ref::adamw_step(p, g, mr, vr, h);
      EXPECT_EQ(p, p0) << what;
      EXPECT_EQ(mr, m0) << what;
      EXPECT_EQ(vr, v0) << what;
    }
}

class FillZeroTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<uint32_t, DType>> {};

TEST_P(FillZeroTest, ZeroesEveryElementAndNothingElse) {
  auto [n, dtype] = GetParam();
  auto t = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::fill_zero(rec, t.t); });
  for (uint8_t b : download_bytes(t.t)) ASSERT_EQ(b, 0);
  t.expect_guards_intact("fill_zero");
}

// f16 / bf16 with an odd count take the 16-bit kernel, the rest the 32-bit one.
INSTANTIATE_TEST_SUITE_P(Shapes, FillZeroTest,
                         ::testing::Values(std::tuple{1u, DType::f32}, std::tuple{7u, DType::f32},
                                           std::tuple{100003u, DType::f32}, std::tuple{7u, DType::f16},
                                           std::tuple{1u, DType::bf16}, std::tuple{8u, DType::bf16},
                                           std::tuple{5u, DType::i32}));

class OptimizerErrors : public test::GpuTest {};

TEST_F(OptimizerErrors, BadInputsNameTheOp) {
  auto f32 = [&](Shape s) { return Tensor::empty(dev(), std::move(s), DType::f32, "t"); };
  Tensor p = f32({7}), hyper = f32({8}), one = f32({1});
  vk::Recorder rec(dev());
  expect_error_naming([&] { ops::adamw_step(rec, p, f32({8}), f32({7}), f32({7}), hyper); }, "adamw_step");
  expect_error_naming([&] { ops::adamw_step(rec, p, f32({7}), f32({7}), f32({7}), f32({7})); }, "adamw_step");
  expect_error_naming(
      [&] { ops::adamw_step(rec, Tensor::empty(dev(), {7}, DType::f16, "p"), f32({7}), f32({7}), f32({7}), hyper); },
      "adamw_step");
  expect_error_naming([&] { ops::adamw_step(rec, Tensor(), f32({7}), f32({7}), f32({7}), hyper); }, "adamw_step");
  expect_error_naming([&] { ops::grad_sumsq(rec, one, {}); }, "grad_sumsq");
  std::vector<Tensor> mixed = {f32({3}), Tensor::empty(dev(), {3}, DType::bf16, "g")};
  expect_error_naming([&] { ops::grad_sumsq(rec, one, mixed); }, "grad_sumsq");
  expect_error_naming([&] { ops::grad_sumsq(rec, f32({2}), std::vector<Tensor>{f32({3})}); }, "grad_sumsq");
  expect_error_naming([&] { ops::clip_scale(rec, hyper, one, f32({2}), 1.0f); }, "clip_scale");
  expect_error_naming([&] { ops::clip_scale(rec, f32({7}), one, one, 1.0f); }, "clip_scale");
  expect_error_naming([&] { ops::clip_scale(rec, hyper, one, one, NAN); }, "clip_scale");
  expect_error_naming([&] { ops::fill_zero(rec, Tensor()); }, "fill_zero");
  EXPECT_EQ(rec.finish().dispatch_count(), 0u);
}

// torch.optim.AdamW + clip_grad_norm_ (tests/fixtures/make_optimizer_fixtures.py), replayed through the
// ops with train::hyper_values.
class TorchAdamwFixture : public test::GpuTest {};

TEST_F(TorchAdamwFixture, MatchesTorch) {
  const std::filesystem::path path = std::filesystem::path(LS_SOURCE_DIR) / "tests/fixtures/adamw_reference.json";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " is missing: run tests/fixtures/make_optimizer_fixtures.py where torch is installed";
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  const train::OptimizerHyper oh{.beta1 = j["betas"][0].get<float>(),
                                 .beta2 = j["betas"][1].get<float>(),
                                 .eps = j["eps"].get<float>(),
                                 .weight_decay = j["weight_decay"].get<float>(),
                                 .max_grad_norm = j["max_grad_norm"].get<float>()};
  const float lr = j["lr"].get<float>();
  std::vector<Shape> shapes;
  std::vector<Tensor> params, grads, ms, vs;
  for (size_t i = 0; i < j["shapes"].size(); ++i) {
    shapes.push_back(j["shapes"][i].get<Shape>());
    params.push_back(test::tensor_from(dev(), shapes[i], DType::f32, j["initial"][i].get<std::vector<float>>()));
    grads.push_back(Tensor::empty(dev(), shapes[i], DType::f32, "grad"));
    ms.push_back(zeros(dev(), shapes[i]));
    vs.push_back(zeros(dev(), shapes[i]));
  }
  Tensor hyper = Tensor::empty_host(dev(), {ops::kHyperSlots}, DType::f32, "hyper");
  Tensor sumsq = Tensor::empty(dev(), {1}, DType::f32, "sumsq"), norm = Tensor::empty(dev(), {1}, DType::f32, "norm");
  vk::Recorder rec(dev());
  ops::grad_sumsq(rec, sumsq, grads);
  ops::clip_scale(rec, hyper, norm, sumsq, oh.max_grad_norm);
  for (size_t i = 0; i < shapes.size(); ++i) ops::adamw_step(rec, params[i], grads[i], ms[i], vs[i], hyper);
  vk::Program program = rec.finish();
  double worst_param = 0, worst_m = 0, worst_v = 0, worst_norm = 0;
  for (size_t t = 0; t < j["steps"].size(); ++t) {
    const auto& step = j["steps"][t];
    for (size_t i = 0; i < shapes.size(); ++i) upload(grads[i], step["grads"][i].get<std::vector<float>>());
    upload(hyper, train::hyper_values(oh, lr, uint32_t(t + 1)));
    program.run();
    const std::string at = " step " + std::to_string(t + 1);
    const std::vector<float> want_norm = {step["grad_norm"].get<float>()};
    test::expect_close(download(norm), want_norm, 1e-6, "grad norm" + at);
    worst_norm = std::max(worst_norm, test::compare(download(norm), want_norm).max_rel);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::string what = " " + std::to_string(i) + at;
      const auto want_p = step["params"][i].get<std::vector<float>>();
      const auto want_m = step["exp_avg"][i].get<std::vector<float>>();
      const auto want_v = step["exp_avg_sq"][i].get<std::vector<float>>();
      test::expect_close(download(params[i]), want_p, 1e-6, "param" + what, shapes[i]);
      test::expect_close(download(ms[i]), want_m, 1e-6, "exp_avg" + what, shapes[i]);
      test::expect_close(download(vs[i]), want_v, 3e-5, "exp_avg_sq" + what, shapes[i]);
      worst_param = std::max(worst_param, test::compare(download(params[i]), want_p).max_rel);
      worst_m = std::max(worst_m, test::compare(download(ms[i]), want_m).max_rel);
      worst_v = std::max(worst_v, test::compare(download(vs[i]), want_v).max_rel);
    }
  }
  record("torch_param_max_rel", worst_param);
  record("torch_exp_avg_max_rel", worst_m);
  record("torch_exp_avg_sq_max_rel", worst_v);
  record("torch_norm_max_rel", worst_norm);
}

}  // namespace
}  // namespace ls
