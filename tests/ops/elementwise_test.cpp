// add, scale and softcap against their references, every storage type. Tolerance (rel): f32 1e-6, f16 1e-3,
// bf16 8e-3 (one rounding of the result to the storage type).
#include "ops/elementwise.h"
#include "support/testing.h"

namespace ls {
namespace {

double tol(DType t) { return t == DType::f32 ? 1e-6 : t == DType::f16 ? 1e-3 : 8e-3; }

class ElementwiseTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<uint32_t, DType>> {};

TEST_P(ElementwiseTest, AddMatchesReference) {
  auto [n, dtype] = GetParam();
  auto a0 = test::rounded(test::random_values(n, 10 + n), dtype);
  auto b0 = test::rounded(test::random_values(n, 20 + n), dtype);
  auto a = test::tensor_from(dev(), {n}, dtype, a0);
  auto b = test::tensor_from(dev(), {n}, dtype, b0);
  auto y = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::add_forward(rec, y.t, a, b); });
  std::vector<float> want(n);
  ops::ref::add_forward(want, a0, b0);
  test::expect_close(download(y.t), test::rounded(want, dtype), tol(dtype), "add", {n});
  y.expect_guards_intact("add");
}

TEST_P(ElementwiseTest, ScaleMatchesReference) {
  auto [n, dtype] = GetParam();
  auto x0 = test::rounded(test::random_values(n, 30 + n), dtype);
  auto x = test::tensor_from(dev(), {n}, dtype, x0);
  auto y = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::scale_forward(rec, y.t, x, -0.75f); });
  std::vector<float> want(n);
  ops::ref::scale_forward(want, x0, -0.75f);
  test::expect_close(download(y.t), test::rounded(want, dtype), tol(dtype), "scale", {n});
  y.expect_guards_intact("scale");
}

// Values over [-40, 40] with a cap of 8: the flat tails (tanh near ±1), the slope, and |x/c| < 0.1, where the
// kernel switches to its series. f32 tolerance 2e-6 relative (the kernel's exp and division).
TEST_P(ElementwiseTest, SoftcapMatchesReference) {
  auto [n, dtype] = GetParam();
  auto x0 = test::random_values(n, 40 + n);
  for (float& v : x0) v *= 40.0f;
  if (n > 3) x0[0] = 0.3f, x0[1] = -0.01f, x0[2] = 1e-6f;
  x0 = test::rounded(x0, dtype);
  auto x = test::tensor_from(dev(), {n}, dtype, x0);
  auto y = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) { ops::softcap_forward(rec, y.t, x, 8.0f); });
  std::vector<float> want(n);
  ops::ref::softcap_forward(want, x0, 8.0f);
  test::expect_close(download(y.t), test::rounded(want, dtype), dtype == DType::f32 ? 2e-6 : tol(dtype), "softcap", {n});
  y.expect_guards_intact("softcap");
  // In place.
  test::run(dev(), [&](vk::Recorder& rec) { ops::softcap_forward(rec, x, x, 8.0f); });
  test::expect_close(download(x), test::rounded(want, dtype), dtype == DType::f32 ? 2e-6 : tol(dtype), "softcap in place");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u, 129u, 100003u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)));

}  // namespace
}  // namespace ls
