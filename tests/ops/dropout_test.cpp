// Dropout against its reference, every storage type and odd sizes. The mask must match the reference
// exactly (dropped elements are exactly 0 and kept ones non-zero, since random_values are never zero);
// values within one rounding to the storage type: f32 1e-6 relative (the same f32 product: measured 0),
// f16 1e-3, bf16 8e-3. Also: Philox4x32-10 against Random123's known answers; forward and backward masks
// agree; the kept share of 2^20 elements within 4σ of 1 − p for p = 0.1 and 0.5; other streams or seeds
// give other masks; the same seed the same mask in another program; a seed rewritten between replays of
// one program changes the mask with no re-recording; y = x in place; accumulate adds; p = 0 is the
// identity bit for bit; the reference backward is the finite-difference gradient of the reference forward.
#include "ops/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "support/testing.h"

namespace ls {
namespace {

using Seed = std::array<uint32_t, 2>;

double tol(DType t) { return t == DType::f32 ? 1e-6 : t == DType::f16 ? 1e-3 : 8e-3; }

Tensor seed_tensor(vk::Device& dev, Seed s) {
  const std::vector<int32_t> v = {int32_t(s[0]), int32_t(s[1])};
  return test::tensor_from_ints(dev, {2}, v);
}

std::vector<bool> mask_of(const std::vector<float>& y) {
  std::vector<bool> m(y.size());
  for (size_t i = 0; i < y.size(); ++i) m[i] = y[i] != 0.0f;
  return m;
}

std::vector<bool> ref_mask(size_t n, Seed seed, uint32_t stream, float p) {
  std::vector<bool> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = ops::ref::dropout_keep(seed, stream, i, p);
  return m;
}

size_t differing(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

size_t kept(const std::vector<bool>& m) { return size_t(std::count(m.begin(), m.end(), true)); }

TEST(DropoutRef, PhiloxKnownAnswers) {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, result.
  struct Kat {
    std::array<uint32_t, 4> counter;
    Seed key;
    std::array<uint32_t, 4> result;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) EXPECT_EQ(ops::ref::philox4x32_10(k.counter, k.key), k.result);
  EXPECT_EQ(ops::ref::dropout_threshold(0.0f), 0u);
  EXPECT_EQ(ops::ref::dropout_threshold(0.5f), 0x80000000u);
  EXPECT_EQ(ops::ref::dropout_threshold(std::nextafter(1.0f, 0.0f)), 0xFFFFFF00u);
}

// L = Σ dy · y(x): dL/dx by central differences in double against the reference backward.
TEST(DropoutRef, BackwardIsTheGradientOfTheForward) {
  const size_t n = 37;
  const float p = 0.3f;
  const Seed seed = {5, 6};
  const auto x = test::random_values(n, 1), dy = test::random_values(n, 2);
  std::vector<float> dx(n);
  ops::ref::dropout_backward(dx, dy, p, seed, 3);
  auto loss = [&](const std::vector<float>& xs) {
    std::vector<float> y(n);
    ops::ref::dropout_forward(y, xs, p, seed, 3);
    double l = 0;
    for (size_t i = 0; i < n; ++i) l += double(dy[i]) * double(y[i]);
    return l;
  };
  const float h = 1.0f / 64;
  for (size_t i = 0; i < n; ++i) {
    auto plus = x, minus = x;
    plus[i] += h;
    minus[i] -= h;
    EXPECT_NEAR(dx[i], (loss(plus) - loss(minus)) / (2.0 * h), 1e-5) << i;
  }
}

class DropoutTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<uint32_t, DType>> {};

TEST_P(DropoutTest, ForwardAndBackwardMatchReference) {
  auto [n, dtype] = GetParam();
  const float p = 0.3f;
  const Seed seed = {0x12345678u, 42u};
  const uint32_t stream = 7;
  auto s = seed_tensor(dev(), seed);
  auto x0 = test::rounded(test::random_values(n, 10 + n), dtype);
  auto dy0 = test::rounded(test::random_values(n, 20 + n), dtype);
  auto x = test::tensor_from(dev(), {n}, dtype, x0);
  auto dy = test::tensor_from(dev(), {n}, dtype, dy0);
  auto y = test::poisoned(dev(), {n}, dtype);
  auto dx = test::poisoned(dev(), {n}, dtype);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::dropout_forward(rec, y.t, x, p, s, stream);
    ops::dropout_backward(rec, dx.t, dy, p, s, stream);
  });
  std::vector<float> want_y(n), want_dx(n);
  ops::ref::dropout_forward(want_y, x0, p, seed, stream);
  ops::ref::dropout_backward(want_dx, dy0, p, seed, stream);
  const auto got_y = download(y.t), got_dx = download(dx.t);
  const auto mask = ref_mask(n, seed, stream, p);
  EXPECT_EQ(differing(mask_of(got_y), mask), 0u) << "forward mask";
  EXPECT_EQ(differing(mask_of(got_dx), mask), 0u) << "backward mask";
  test::expect_close(got_y, test::rounded(want_y, dtype), tol(dtype), "dropout_forward", {n});
  test::expect_close(got_dx, test::rounded(want_dx, dtype), tol(dtype), "dropout_backward", {n});
  y.expect_guards_intact("dropout_forward");
  dx.expect_guards_intact("dropout_backward");
}

TEST_P(DropoutTest, BackwardAccumulates) {
  auto [n, dtype] = GetParam();
  const float p = 0.5f;
  const Seed seed = {1, 2};
  auto s = seed_tensor(dev(), seed);
  auto dy0 = test::rounded(test::random_values(n, 30 + n), dtype);
  auto before = test::rounded(test::random_values(n, 40 + n), dtype);
  auto dy = test::tensor_from(dev(), {n}, dtype, dy0);
  auto dx = test::tensor_from(dev(), {n}, dtype, before);
  test::run(dev(), [&](vk::Recorder& rec) { ops::dropout_backward(rec, dx, dy, p, s, 0, true); });
  std::vector<float> want = before;
  ops::ref::dropout_backward(want, dy0, p, seed, 0, true);
  test::expect_close(download(dx), test::rounded(want, dtype), tol(dtype), "dropout_backward accumulate", {n});
}

TEST_P(DropoutTest, InPlaceAndPZeroIsIdentity) {
  auto [n, dtype] = GetParam();
  const Seed seed = {9, 9};
  auto s = seed_tensor(dev(), seed);
  auto x0 = test::rounded(test::random_values(n, 50 + n), dtype);
  auto x = test::tensor_from(dev(), {n}, dtype, x0);
  auto same = test::tensor_from(dev(), {n}, dtype, x0);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::dropout_forward(rec, x, x, 0.25f, s, 1);       // in place
    ops::dropout_forward(rec, same, same, 0.0f, s, 1);  // p = 0
  });
  std::vector<float> want(n);
  ops::ref::dropout_forward(want, x0, 0.25f, seed, 1);
  test::expect_close(download(x), test::rounded(want, dtype), tol(dtype), "dropout_forward in place", {n});
  EXPECT_EQ(download_bytes(same), download_bytes(test::tensor_from(dev(), {n}, dtype, x0))) << "p = 0 changed x";
}

INSTANTIATE_TEST_SUITE_P(Shapes, DropoutTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u, 129u, 4864u, 100003u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)));

class DropoutMask : public test::GpuTest {
 protected:
  static constexpr uint32_t kN = 1u << 20;
  // The GPU forward's mask on ones.
  std::vector<bool> gpu_mask(float p, const Tensor& seed, uint32_t stream) {
    auto y = Tensor::empty(dev(), {kN}, DType::f32);
    test::run(dev(), [&](vk::Recorder& rec) { ops::dropout_forward(rec, y, ones_, p, seed, stream); });
    return mask_of(download(y));
  }
  Tensor ones_ = test::tensor_from(dev(), {kN}, DType::f32, std::vector<float>(kN, 1.0f));
};

TEST_F(DropoutMask, KeptShareWithinFourSigma) {
  for (float p : {0.1f, 0.5f}) {
    const Seed seed = {2024, 11};
    const auto m = gpu_mask(p, seed_tensor(dev(), seed), 3);
    EXPECT_EQ(differing(m, ref_mask(kN, seed, 3, p)), 0u) << "p " << p;
    const double expected = kN * (1.0 - p), sigma = std::sqrt(kN * p * (1.0 - p));
    const double k = double(kept(m));
    std::printf("  [measured] p %.1f: kept %.0f of %u, %.2f sigma from %.0f\n", p, k, kN, (k - expected) / sigma,
                expected);
    EXPECT_LE(std::abs(k - expected), 4 * sigma) << "p " << p;
  }
}

TEST_F(DropoutMask, StreamsAndSeedsGiveOtherMasksTheSameSeedTheSameMask) {
  const float p = 0.5f;
  const auto base = gpu_mask(p, seed_tensor(dev(), {1, 2}), 0);
  // Two independent masks differ in about half the places (2p(1 - p) = 1/2): well above 40% here.
  for (const auto& other : {gpu_mask(p, seed_tensor(dev(), {1, 2}), 1), gpu_mask(p, seed_tensor(dev(), {2, 2}), 0),
                            gpu_mask(p, seed_tensor(dev(), {1, 3}), 0)})
    EXPECT_GT(differing(base, other), kN * 4 / 10);
  EXPECT_EQ(differing(base, gpu_mask(p, seed_tensor(dev(), {1, 2}), 0)), 0u) << "same seed, another program";
}

// One recorded program replayed with the seed rewritten by the host in between: forward and backward
// share each replay's mask, and the mask follows the seed.
TEST_F(DropoutMask, SeedRewrittenBetweenReplays) {
  const uint32_t n = 4099;
  auto seed = Tensor::empty_host(dev(), {2}, DType::i32, "seed");
  auto x = test::tensor_from(dev(), {n}, DType::f32, test::random_values(n, 3));
  auto y = Tensor::empty(dev(), {n}, DType::f32), dx = Tensor::empty(dev(), {n}, DType::f32);
  vk::Recorder rec(dev());
  ops::dropout_forward(rec, y, x, 0.2f, seed, 5);
  ops::dropout_backward(rec, dx, x, 0.2f, seed, 5);
  vk::Program program = rec.finish();
  std::vector<std::vector<bool>> masks;
  for (int32_t step : {0, 1, 0}) {
    upload(seed, std::vector<int32_t>{77, step});
    program.run();
    masks.push_back(mask_of(download(y)));
    EXPECT_EQ(differing(masks.back(), mask_of(download(dx))), 0u) << "step " << step;
    EXPECT_EQ(differing(masks.back(), ref_mask(n, {77, uint32_t(step)}, 5, 0.2f)), 0u) << "step " << step;
  }
  EXPECT_GT(differing(masks[0], masks[1]), n / 10);
  EXPECT_EQ(differing(masks[0], masks[2]), 0u);
}

TEST_F(DropoutMask, BadInputsNameTheOp) {
  auto x = test::tensor_from(dev(), {8}, DType::f32, test::random_values(8, 1));
  auto y = Tensor::empty(dev(), {8}, DType::f32);
  auto seed = seed_tensor(dev(), {1, 2});
  auto record = [&](const std::function<void(vk::Recorder&)>& f) {
    return [&, f] {
      vk::Recorder rec(dev());
      f(rec);
    };
  };
  for (float p : {1.0f, -0.1f, 1.5f, NAN})
    test::expect_error_naming(record([&, p](vk::Recorder& r) { ops::dropout_forward(r, y, x, p, seed, 0); }),
                              "dropout_forward");
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_backward(r, y, x, 1.0f, seed, 0); }),
                            "dropout_backward");
  auto wrong_shape = Tensor::empty(dev(), {9}, DType::f32);
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_forward(r, wrong_shape, x, 0.1f, seed, 0); }),
                            "dropout_forward");
  auto half = Tensor::empty(dev(), {8}, DType::f16);
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_backward(r, half, x, 0.1f, seed, 0); }),
                            "dropout_backward");
  auto float_seed = Tensor::empty(dev(), {2}, DType::f32);
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_forward(r, y, x, 0.1f, float_seed, 0); }),
                            "dropout_forward");
  auto long_seed = test::tensor_from_ints(dev(), {3}, std::vector<int32_t>{1, 2, 3});
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_forward(r, y, x, 0.1f, long_seed, 0); }),
                            "dropout_forward");
  test::expect_error_naming(record([&](vk::Recorder& r) { ops::dropout_forward(r, y, Tensor(), 0.1f, seed, 0); }),
                            "dropout_forward");
}

}  // namespace
}  // namespace ls
