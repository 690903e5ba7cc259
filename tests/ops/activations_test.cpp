// silu_mul and gelu_tanh_mul forward/backward against the CPU reference, every storage type; the reference
// backwards against central finite differences of the reference forwards in double. Tolerance (rel): f32 1e-5
// (exp, tanh and division differ by a few ulp between devices), f16 2e-3, bf16 1e-2 (storage roundings).
#include "ops/activations.h"

#include <cmath>
#include <cstdio>

#include "support/testing.h"

namespace ls {
namespace {

double tol(DType t) { return t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2; }

void record_max_rel(const char* key, std::span<const float> actual, std::span<const float> expected) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", test::compare(actual, expected).max_rel);
  ::testing::Test::RecordProperty(key, text);
}

// gate spans [-8, 8] so that sigmoid covers both tails; up and dy in [-1, 1].
std::vector<float> gate_values(size_t n, uint32_t seed) { return test::random_values(n, seed, 8.0f); }

using Case = std::tuple<uint32_t, DType>;  // columns, dtype (3 rows)
std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  return "c" + std::to_string(std::get<0>(c.param)) + "_" + dtype_name(std::get<1>(c.param));
}
class SiluMulTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(SiluMulTest, ForwardMatchesReference) {
  auto [cols, dtype] = GetParam();
  const Shape shape{3, cols};
  const uint32_t n = 3 * cols;
  auto g0 = test::rounded(gate_values(n, 1 + n), dtype);
  auto u0 = test::rounded(test::random_values(n, 2 + n), dtype);
  auto gate = test::tensor_from(dev(), shape, dtype, g0);
  auto up = test::tensor_from(dev(), shape, dtype, u0);
  auto y = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::silu_mul_forward(rec, y.t, gate, up); });
  std::vector<float> want(n);
  ops::ref::silu_mul_forward(want, g0, u0);
  want = test::rounded(want, dtype);
  auto got = download(y.t);
  test::expect_close(got, want, tol(dtype), "silu_mul_forward", shape);
  record_max_rel("max_rel_err", got, want);
  y.expect_guards_intact("silu_mul_forward");
}

TEST_P(SiluMulTest, BackwardMatchesReference) {
  auto [cols, dtype] = GetParam();
  const Shape shape{3, cols};
  const uint32_t n = 3 * cols;
  auto g0 = test::rounded(gate_values(n, 3 + n), dtype);
  auto u0 = test::rounded(test::random_values(n, 4 + n), dtype);
  auto dy0 = test::rounded(test::random_values(n, 5 + n), dtype);
  auto gate = test::tensor_from(dev(), shape, dtype, g0);
  auto up = test::tensor_from(dev(), shape, dtype, u0);
  auto dy = test::tensor_from(dev(), shape, dtype, dy0);
  auto dgate = test::poisoned(dev(), shape, dtype);
  auto dup = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::silu_mul_backward(rec, dgate.t, dup.t, dy, gate, up); });
  std::vector<float> want_dgate(n), want_dup(n);
  ops::ref::silu_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  want_dgate = test::rounded(want_dgate, dtype);
  want_dup = test::rounded(want_dup, dtype);
  auto got_dgate = download(dgate.t), got_dup = download(dup.t);
  test::expect_close(got_dgate, want_dgate, tol(dtype), "silu_mul_backward dgate", shape);
  test::expect_close(got_dup, want_dup, tol(dtype), "silu_mul_backward dup", shape);
  record_max_rel("max_rel_err_dgate", got_dgate, want_dgate);
  record_max_rel("max_rel_err_dup", got_dup, want_dup);
  dgate.expect_guards_intact("silu_mul_backward dgate");
  dup.expect_guards_intact("silu_mul_backward dup");
}

INSTANTIATE_TEST_SUITE_P(Shapes, SiluMulTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u, 129u, 4864u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         case_name);

// Gates far into both tails of the sigmoid: finite, no NaN, and still matching the reference.
class SiluMulLargeGateTest : public test::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SiluMulLargeGateTest, NoNaNAndMatchesReference) {
  const DType dtype = GetParam();
  const std::vector<float> g0{30, -30, 50, -50, 88.5f, -88.5f, 100, -100, 1000, -1000, 20000, -20000};
  const uint32_t n = uint32_t(g0.size());
  auto u0 = test::rounded(test::random_values(n, 7), dtype);
  auto dy0 = test::rounded(test::random_values(n, 8), dtype);
  auto gate = test::tensor_from(dev(), {n}, dtype, g0);
  auto up = test::tensor_from(dev(), {n}, dtype, u0);
  auto dy = test::tensor_from(dev(), {n}, dtype, dy0);
  auto y = test::poisoned(dev(), {n}, dtype);
  auto dgate = test::poisoned(dev(), {n}, dtype);
  auto dup = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::silu_mul_forward(rec, y.t, gate, up);
    ops::silu_mul_backward(rec, dgate.t, dup.t, dy, gate, up);
  });
  std::vector<float> want_y(n), want_dgate(n), want_dup(n);
  ops::ref::silu_mul_forward(want_y, g0, u0);
  ops::ref::silu_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  auto got_y = download(y.t), got_dgate = download(dgate.t), got_dup = download(dup.t);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_TRUE(std::isfinite(got_y[i]) && std::isfinite(got_dgate[i]) && std::isfinite(got_dup[i]))
        << "gate " << g0[i] << ": y " << got_y[i] << ", dgate " << got_dgate[i] << ", dup " << got_dup[i];
  }
  test::expect_close(got_y, test::rounded(want_y, dtype), tol(dtype), "silu_mul_forward large gates", {n});
  test::expect_close(got_dgate, test::rounded(want_dgate, dtype), tol(dtype), "silu_mul_backward dgate", {n});
  test::expect_close(got_dup, test::rounded(want_dup, dtype), tol(dtype), "silu_mul_backward dup", {n});
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SiluMulLargeGateTest, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& c) { return std::string(dtype_name(c.param)); });

// The f16 rows take eight values a thread (shaders/common/f16x8.glsl) over a grid of at most 4096 workgroups:
// 1,801 × 4,863 values (8.76M) make some threads run the eight-a-thread loop twice and leave 7 values to the
// one-a-thread tail. Both activations, forward and backward, the backward in place (dgate over gate, dup over up,
// as the header allows).
class GatedF16GridStrideTest : public test::GpuTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GatedF16GridStrideTest, EveryValueMatchesTheReference) {
  const bool gelu = GetParam();
  const Shape shape{1801, 4863};
  const size_t n = size_t(shape[0]) * shape[1];
  const DType dtype = DType::f16;
  auto g0 = test::rounded(gate_values(n, 31), dtype);
  auto u0 = test::rounded(test::random_values(n, 32), dtype);
  auto dy0 = test::rounded(test::random_values(n, 33), dtype);
  auto gate = test::tensor_from(dev(), shape, dtype, g0);
  auto up = test::tensor_from(dev(), shape, dtype, u0);
  auto dy = test::tensor_from(dev(), shape, dtype, dy0);
  auto y = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&](vk::Recorder& rec) {
    if (gelu) {
      ops::gelu_tanh_mul_forward(rec, y.t, gate, up);
      ops::gelu_tanh_mul_backward(rec, gate, up, dy, gate, up);
    } else {
      ops::silu_mul_forward(rec, y.t, gate, up);
      ops::silu_mul_backward(rec, gate, up, dy, gate, up);
    }
  });
  std::vector<float> want_y(n), want_dgate(n), want_dup(n);
  if (gelu) {
    ops::ref::gelu_tanh_mul_forward(want_y, g0, u0);
    ops::ref::gelu_tanh_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  } else {
    ops::ref::silu_mul_forward(want_y, g0, u0);
    ops::ref::silu_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  }
  test::expect_close(download(y.t), test::rounded(want_y, dtype), tol(dtype), "forward", shape);
  test::expect_close(download(gate), test::rounded(want_dgate, dtype), tol(dtype), "dgate in place", shape);
  test::expect_close(download(up), test::rounded(want_dup, dtype), tol(dtype), "dup in place", shape);
  y.expect_guards_intact("forward");
}

INSTANTIATE_TEST_SUITE_P(Activations, GatedF16GridStrideTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& c) { return c.param ? "gelu_tanh" : "silu"; });

// The reference backward is the gradient of L = sum(dy * y(gate, up)), by central differences in double.
TEST(SiluMulReference, BackwardMatchesFiniteDifferences) {
  const size_t n = 40;
  std::vector<double> g(n), u(n), dy(n), y(n), dgate(n), dup(n);
  auto gr = gate_values(n, 11), ur = test::random_values(n, 12), dyr = test::random_values(n, 13);
  for (size_t i = 0; i < n; ++i) g[i] = gr[i], u[i] = ur[i], dy[i] = dyr[i];
  g[0] = 30, g[1] = -30;
  ops::ref::silu_mul_backward(std::span<double>(dgate), std::span<double>(dup), dy, g, u);
  auto loss = [&](const std::vector<double>& gate, const std::vector<double>& up) {
    ops::ref::silu_mul_forward(std::span<double>(y), gate, up);
    double l = 0;
    for (size_t i = 0; i < n; ++i) l += dy[i] * y[i];
    return l;
  };
  const double h = 1e-6;
  for (size_t k = 0; k < n; ++k) {
    auto gp = g, gm = g, up = u, um = u;
    gp[k] += h, gm[k] -= h, up[k] += h, um[k] -= h;
    EXPECT_NEAR(dgate[k], (loss(gp, u) - loss(gm, u)) / (2 * h), 1e-7 * (1 + std::fabs(dgate[k]))) << "dgate " << k;
    EXPECT_NEAR(dup[k], (loss(g, up) - loss(g, um)) / (2 * h), 1e-7 * (1 + std::fabs(dup[k]))) << "dup " << k;
  }
}

TEST_F(SiluMulTest, BadInputsThrow) {
  auto a = Tensor::empty(dev(), {4, 8}, DType::f32);
  auto b = Tensor::empty(dev(), {4, 9}, DType::f32);
  auto h = Tensor::empty(dev(), {4, 8}, DType::f16);
  auto ints = Tensor::empty(dev(), {4, 8}, DType::i32);
  auto expect_error = [&](const std::function<void(vk::Recorder&)>& body, const char* op) {
    vk::Recorder rec(dev());
    try {
      body(rec);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  expect_error([&](vk::Recorder& r) { ops::silu_mul_forward(r, a, a, b); }, "silu_mul_forward");
  expect_error([&](vk::Recorder& r) { ops::silu_mul_forward(r, a, h, h); }, "silu_mul_forward");  // f16 in, f32 out
  expect_error([&](vk::Recorder& r) { ops::silu_mul_forward(r, ints, ints, ints); }, "silu_mul_forward");
  expect_error([&](vk::Recorder& r) { ops::silu_mul_backward(r, a, Tensor(), a, a, a); }, "silu_mul_backward");
  expect_error([&](vk::Recorder& r) { ops::silu_mul_backward(r, a, a, b, a, a); }, "silu_mul_backward");
  expect_error([&](vk::Recorder& r) { ops::silu_mul_backward(r, h, a, a, a, a); }, "silu_mul_backward");  // dgate f16, dup f32
  expect_error([&](vk::Recorder& r) { ops::gelu_tanh_mul_forward(r, a, a, b); }, "gelu_tanh_mul_forward");
  expect_error([&](vk::Recorder& r) { ops::gelu_tanh_mul_forward(r, a, h, h); }, "gelu_tanh_mul_forward");
  expect_error([&](vk::Recorder& r) { ops::gelu_tanh_mul_backward(r, a, a, b, a, a); }, "gelu_tanh_mul_backward");
}

// gelu_tanh_mul (Gemma's GeGLU), the same checks: random non-zero gates over [-8, 8] (both tails of tanh and
// the curved middle), odd and real sizes, every storage type; outputs poisoned with guard bands.
class GeluTanhMulTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(GeluTanhMulTest, ForwardMatchesReference) {
  auto [cols, dtype] = GetParam();
  const Shape shape{3, cols};
  const uint32_t n = 3 * cols;
  auto g0 = test::rounded(gate_values(n, 21 + n), dtype);
  auto u0 = test::rounded(test::random_values(n, 22 + n), dtype);
  auto gate = test::tensor_from(dev(), shape, dtype, g0);
  auto up = test::tensor_from(dev(), shape, dtype, u0);
  auto y = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::gelu_tanh_mul_forward(rec, y.t, gate, up); });
  std::vector<float> want(n);
  ops::ref::gelu_tanh_mul_forward(want, g0, u0);
  want = test::rounded(want, dtype);
  auto got = download(y.t);
  test::expect_close(got, want, tol(dtype), "gelu_tanh_mul_forward", shape);
  record_max_rel("max_rel_err", got, want);
  y.expect_guards_intact("gelu_tanh_mul_forward");
}

TEST_P(GeluTanhMulTest, BackwardMatchesReference) {
  auto [cols, dtype] = GetParam();
  const Shape shape{3, cols};
  const uint32_t n = 3 * cols;
  auto g0 = test::rounded(gate_values(n, 23 + n), dtype);
  auto u0 = test::rounded(test::random_values(n, 24 + n), dtype);
  auto dy0 = test::rounded(test::random_values(n, 25 + n), dtype);
  auto gate = test::tensor_from(dev(), shape, dtype, g0);
  auto up = test::tensor_from(dev(), shape, dtype, u0);
  auto dy = test::tensor_from(dev(), shape, dtype, dy0);
  auto dgate = test::poisoned(dev(), shape, dtype);
  auto dup = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::gelu_tanh_mul_backward(rec, dgate.t, dup.t, dy, gate, up); });
  std::vector<float> want_dgate(n), want_dup(n);
  ops::ref::gelu_tanh_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  want_dgate = test::rounded(want_dgate, dtype);
  want_dup = test::rounded(want_dup, dtype);
  auto got_dgate = download(dgate.t), got_dup = download(dup.t);
  test::expect_close(got_dgate, want_dgate, tol(dtype), "gelu_tanh_mul_backward dgate", shape);
  test::expect_close(got_dup, want_dup, tol(dtype), "gelu_tanh_mul_backward dup", shape);
  record_max_rel("max_rel_err_dgate", got_dgate, want_dgate);
  record_max_rel("max_rel_err_dup", got_dup, want_dup);
  dgate.expect_guards_intact("gelu_tanh_mul_backward dgate");
  dup.expect_guards_intact("gelu_tanh_mul_backward dup");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GeluTanhMulTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u, 129u, 6912u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         case_name);

// Gates far into both tails of tanh (where exp(2u) would overflow): finite, and matching the reference.
TEST_F(GeluTanhMulTest, LargeGatesGiveNoNaN) {
  const std::vector<float> g0{30, -30, 50, -50, 88.5f, -88.5f, 100, -100, 1000, -1000, 20000, -20000};
  const uint32_t n = uint32_t(g0.size());
  auto u0 = test::random_values(n, 27), dy0 = test::random_values(n, 28);
  auto gate = test::tensor_from(dev(), {n}, DType::f32, g0);
  auto up = test::tensor_from(dev(), {n}, DType::f32, u0);
  auto dy = test::tensor_from(dev(), {n}, DType::f32, dy0);
  auto y = test::poisoned(dev(), {n}, DType::f32);
  auto dgate = test::poisoned(dev(), {n}, DType::f32);
  auto dup = test::poisoned(dev(), {n}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::gelu_tanh_mul_forward(rec, y.t, gate, up);
    ops::gelu_tanh_mul_backward(rec, dgate.t, dup.t, dy, gate, up);
  });
  std::vector<float> want_y(n), want_dgate(n), want_dup(n);
  ops::ref::gelu_tanh_mul_forward(want_y, g0, u0);
  ops::ref::gelu_tanh_mul_backward(want_dgate, want_dup, dy0, g0, u0);
  test::expect_close(download(y.t), want_y, 1e-5, "gelu_tanh_mul_forward large gates", {n});
  test::expect_close(download(dgate.t), want_dgate, 1e-5, "gelu_tanh_mul_backward dgate large gates", {n});
  test::expect_close(download(dup.t), want_dup, 1e-5, "gelu_tanh_mul_backward dup large gates", {n});
}

// The reference: gelu_tanh at known points (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) by Python's math in
// double, the formula of torch.nn.functional.gelu(x, approximate="tanh")), and
// its backward the gradient of L = sum(dy * y(gate, up)) by central differences in double.
// f32 inputs, f16 outputs (the operands of tensor-core products, model/layer_acts.h F16Operands): every output
// is the f32-output kernel's value rounded to nearest even (ls::f32_to_f16, as ops/convert rounds), bit for bit.
class ActivationF16OutputTest : public test::GpuTest {};

TEST_F(ActivationF16OutputTest, OutputsAreTheF32ResultsRounded) {
  const Shape shape{3, 257};
  const size_t n = 3 * 257;
  const auto g0 = gate_values(n, 41), u0 = test::random_values(n, 42), dy0 = test::random_values(n, 43);
  const Tensor gate = test::tensor_from(dev(), shape, DType::f32, g0), up = test::tensor_from(dev(), shape, DType::f32, u0);
  const Tensor dy = test::tensor_from(dev(), shape, DType::f32, dy0);
  using Forward = void (*)(vk::Recorder&, const Tensor&, const Tensor&, const Tensor&);
  using Backward = void (*)(vk::Recorder&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
  const std::tuple<const char*, Forward, Backward> kinds[] = {
      {"silu_mul", ops::silu_mul_forward, ops::silu_mul_backward},
      {"gelu_tanh_mul", ops::gelu_tanh_mul_forward, ops::gelu_tanh_mul_backward}};
  for (const auto& [name, forward, backward] : kinds) {
    auto y32 = test::poisoned(dev(), shape, DType::f32), y16 = test::poisoned(dev(), shape, DType::f16);
    auto dg32 = test::poisoned(dev(), shape, DType::f32), dg16 = test::poisoned(dev(), shape, DType::f16);
    auto du32 = test::poisoned(dev(), shape, DType::f32), du16 = test::poisoned(dev(), shape, DType::f16);
    // (clang 14 cannot capture structured bindings: the kernels are captured by copy under other names)
    test::run(dev(), [&, fwd = forward, bwd = backward](vk::Recorder& rec) {
      fwd(rec, y32.t, gate, up);
      fwd(rec, y16.t, gate, up);
      bwd(rec, dg32.t, du32.t, dy, gate, up);
      bwd(rec, dg16.t, du16.t, dy, gate, up);
    });
    const std::pair<const test::Poisoned*, const test::Poisoned*> pairs[] = {{&y32, &y16}, {&dg32, &dg16}, {&du32, &du16}};
    for (const auto& [wide, narrow] : pairs) {
      const std::vector<float> want = download(wide->t), got = download(narrow->t);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], f16_to_f32(f32_to_f16(want[i]))) << name << " @" << i << " from " << want[i];
      narrow->expect_guards_intact(name);
    }
  }
}

TEST(GeluTanhMulReference, KnownValuesAndFiniteDifferences) {
  const std::vector<double> x{-3, -1, -0.5, 0.5, 1, 2, 3}, one(7, 1.0);
  const std::vector<double> want{-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606,
                                 0.34571400982514394, 0.8411919906082768, 1.954597694087775, 2.996362607918227};
  std::vector<double> got(7);
  ops::ref::gelu_tanh_mul_forward(std::span<double>(got), x, one);
  for (size_t i = 0; i < 7; ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "gelu_tanh(" << x[i] << ")";

  const size_t n = 40;
  std::vector<double> g(n), u(n), dy(n), y(n), dgate(n), dup(n);
  auto gr = gate_values(n, 31), ur = test::random_values(n, 32), dyr = test::random_values(n, 33);
  for (size_t i = 0; i < n; ++i) g[i] = gr[i], u[i] = ur[i], dy[i] = dyr[i];
  ops::ref::gelu_tanh_mul_backward(std::span<double>(dgate), std::span<double>(dup), dy, g, u);
  auto loss = [&](const std::vector<double>& gate, const std::vector<double>& up) {
    ops::ref::gelu_tanh_mul_forward(std::span<double>(y), gate, up);
    double l = 0;
    for (size_t i = 0; i < n; ++i) l += dy[i] * y[i];
    return l;
  };
  const double h = 1e-6;
  for (size_t k = 0; k < n; ++k) {
    auto gp = g, gm = g, up = u, um = u;
    gp[k] += h, gm[k] -= h, up[k] += h, um[k] -= h;
    EXPECT_NEAR(dgate[k], (loss(gp, u) - loss(gm, u)) / (2 * h), 1e-7 * (1 + std::fabs(dgate[k]))) << "dgate " << k;
    EXPECT_NEAR(dup[k], (loss(g, up) - loss(g, um)) / (2 * h), 1e-7 * (1 + std::fabs(dup[k]))) << "dup " << k;
  }
}

}  // namespace
}  // namespace ls
