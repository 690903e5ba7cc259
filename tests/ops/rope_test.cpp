// RoPE forward/backward against the CPU reference, every storage type, and the reference backward
// against finite differences of the reference forward. Tolerance (rel): f32 1e-5, f16 2e-3, bf16 1e-2
// (storage roundings of x and y). The reference computes the angle in f32 exactly as the kernel and HF
// do, so only the cos/sin evaluation (~1 ulp) and the rotation's arithmetic differ.
#include "ops/rope.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ops/copy_rows.h"
#include "support/testing.h"

namespace ls {
namespace {

double tol(DType t) { return t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2; }

// Random positions in [0, 4096], with both ends present.
std::vector<int32_t> positions_for(uint32_t tokens, uint32_t seed) {
  auto pos = test::random_ints(tokens, seed, 0, 4096);
  pos[0] = 4096;
  if (tokens > 1) pos[tokens - 1] = 0;
  return pos;
}

void record_max_rel(const char* key, std::span<const float> actual, std::span<const float> expected) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", test::compare(actual, expected).max_rel);
  ::testing::Test::RecordProperty(key, text);
}

// tokens, heads, head dim, dtype, theta
using Case = std::tuple<uint32_t, uint32_t, uint32_t, DType, float>;
std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  return "t" + std::to_string(std::get<0>(c.param)) + "_h" + std::to_string(std::get<1>(c.param)) + "_d" +
         std::to_string(std::get<2>(c.param)) + "_" + dtype_name(std::get<3>(c.param)) + "_theta1e" +
         std::to_string(std::lround(std::log10(std::get<4>(c.param))));
}
class RopeTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(RopeTest, ForwardMatchesReference) {
  auto [tokens, heads, d, dtype, theta] = GetParam();
  const Shape shape{tokens, heads, d};
  const uint32_t n = tokens * heads * d;
  auto x0 = test::rounded(test::random_values(n, 1 + n + d), dtype);
  auto pos0 = positions_for(tokens, 2 + n);
  auto x = test::tensor_from(dev(), shape, dtype, x0);
  auto pos = test::tensor_from_ints(dev(), {tokens}, pos0);
  auto y = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&, theta = theta](vk::Recorder& rec) { ops::rope_forward(rec, y.t, x, pos, theta); });
  std::vector<float> want(n);
  ops::ref::rope_forward(want, x0, pos0, d, theta);
  auto got = download(y.t);
  test::expect_close(got, test::rounded(want, dtype), tol(dtype), "rope_forward", shape);
  record_max_rel("max_rel_err", got, test::rounded(want, dtype));
  y.expect_guards_intact("rope_forward");
}

TEST_P(RopeTest, BackwardMatchesReference) {
  auto [tokens, heads, d, dtype, theta] = GetParam();
  const Shape shape{tokens, heads, d};
  const uint32_t n = tokens * heads * d;
  auto dy0 = test::rounded(test::random_values(n, 3 + n + d), dtype);
  auto pos0 = positions_for(tokens, 4 + n);
  auto dy = test::tensor_from(dev(), shape, dtype, dy0);
  auto pos = test::tensor_from_ints(dev(), {tokens}, pos0);
  auto dx = test::poisoned(dev(), shape, dtype);
  test::run(dev(), [&, theta = theta](vk::Recorder& rec) { ops::rope_backward(rec, dx.t, dy, pos, theta); });
  std::vector<float> want(n);
  ops::ref::rope_backward(want, dy0, pos0, d, theta);
  auto got = download(dx.t);
  test::expect_close(got, test::rounded(want, dtype), tol(dtype), "rope_backward", shape);
  record_max_rel("max_rel_err", got, test::rounded(want, dtype));
  dx.expect_guards_intact("rope_backward");
}

INSTANTIATE_TEST_SUITE_P(Shapes, RopeTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 33u), ::testing::Values(1u, 3u, 14u),
                                            ::testing::Values(2u, 8u, 64u, 128u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16),
                                            ::testing::Values(1e6f, 1e4f)),
                         case_name);

class RopeMiscTest : public test::GpuTest {};

// Leading dims [B, T] fold into tokens; in place (y = x); one program replayed with new positions.
TEST_F(RopeMiscTest, InPlaceFoldedDimsAndReplayWithNewPositions) {
  const Shape shape{2, 5, 14, 64};
  const uint32_t tokens = 10, n = tokens * 14 * 64;
  auto x0 = test::random_values(n, 11);
  auto pos_a = positions_for(tokens, 12), pos_b = positions_for(tokens, 13);
  auto x = test::tensor_from(dev(), shape, DType::f32, x0);
  auto pos = test::tensor_from_ints(dev(), {2, 5}, pos_a);
  vk::Recorder rec(dev());
  ops::rope_forward(rec, x, x, pos, 1e6f);
  auto program = rec.finish();
  program.run();
  std::vector<float> want(n);
  ops::ref::rope_forward(want, x0, pos_a, 64, 1e6f);
  test::expect_close(download(x), want, 1e-5, "rope_forward in place", shape);

  upload(x, x0);
  upload(pos, pos_b);
  program.run();
  ops::ref::rope_forward(want, x0, pos_b, 64, 1e6f);
  test::expect_close(download(x), want, 1e-5, "rope_forward replayed with new positions", shape);
}

// Positions far past the tests above (long contexts): the kernel's own sin/cos range reduction holds.
TEST_F(RopeMiscTest, LargePositions) {
  const uint32_t tokens = 6, heads = 2, d = 128, n = tokens * heads * d;
  const std::vector<int32_t> pos0{32767, 131071, 1 << 20, 3000000, 4000000, 123457};
  auto x0 = test::random_values(n, 21);
  auto x = test::tensor_from(dev(), {tokens, heads, d}, DType::f32, x0);
  auto pos = test::tensor_from_ints(dev(), {tokens}, pos0);
  auto y = test::poisoned(dev(), {tokens, heads, d}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::rope_forward(rec, y.t, x, pos, 1e4f); });
  std::vector<float> want(n);
  ops::ref::rope_forward(want, x0, pos0, d, 1e4f);
  auto got = download(y.t);
  test::expect_close(got, want, 1e-5, "rope_forward large positions", {tokens, heads, d});
  record_max_rel("max_rel_err", got, want);
}

// RoPE with the KV-cache write in one pass (inference): q rotated in place, k rotated and v copied into the caches
// at rows offsets[slot] + t, against the CPU reference (1e-5; f16: the reference's values rounded, 2e-3) and bit for
// bit against rope_forward + copy_rows on the device; a replay at another offset; rows past the cache skipped.
TEST_F(RopeMiscTest, KvCacheForwardMatchesRopeThenCopy) {
  for (DType dt : {DType::f32, DType::f16}) {
    const uint32_t tokens = 3, H = 6, KV = 2, D = 64, S = 9;
    const float theta = 1e6f;
    const auto q0 = test::rounded(test::random_values(tokens * H * D, 31), dt);
    const auto k0 = test::rounded(test::random_values(tokens * KV * D, 32), dt);
    const auto v0 = test::rounded(test::random_values(tokens * KV * D, 33), dt);
    const auto c0 = test::rounded(test::random_values(S * KV * D, 34), dt);  // what the caches hold already
    const std::vector<int32_t> pos0{4, 5, 6}, offsets0{0, 4};
    auto inv = ops::rope_inv_freq_tensor(dev(), ops::rope_inv_freq(D, theta));
    auto pos = test::tensor_from_ints(dev(), {tokens}, pos0);
    auto offsets = test::tensor_from_ints(dev(), {2}, offsets0);
    auto q = test::tensor_from(dev(), {1, tokens, H, D}, dt, q0);
    auto k = test::tensor_from(dev(), {1, tokens, KV, D}, dt, k0), v = test::tensor_from(dev(), {1, tokens, KV, D}, dt, v0);
    auto kc = test::tensor_from(dev(), {1, S, KV, D}, dt, c0), vc = test::tensor_from(dev(), {1, S, KV, D}, dt, c0);
    vk::Recorder rec(dev());
    ops::rope_kv_cache_forward(rec, q, k, v, kc, vc, pos, inv, offsets, 1);
    auto program = rec.finish();
    program.run();

    std::vector<float> want_q = q0, want_k = c0, want_v = c0;
    ops::ref::rope_kv_cache_forward(want_q, k0, v0, want_k, want_v, pos0, offsets0, 1, D, KV, theta);
    const double t = dt == DType::f32 ? 1e-5 : 2e-3;
    test::expect_close(download(q), test::rounded(want_q, dt), t, "rope_kv q", q.shape());
    test::expect_close(download(kc), test::rounded(want_k, dt), t, "rope_kv k_cache", kc.shape());
    EXPECT_EQ(download(vc), want_v) << "v is copied as it is";

    // The unfused ops on the device give the same bits.
    auto q2 = test::tensor_from(dev(), {1, tokens, H, D}, dt, q0), k2 = test::tensor_from(dev(), {1, tokens, KV, D}, dt, k0);
    auto kc2 = test::tensor_from(dev(), {1, S, KV, D}, dt, c0), vc2 = test::tensor_from(dev(), {1, S, KV, D}, dt, c0);
    test::run(dev(), [&](vk::Recorder& r) {
      ops::rope_forward(r, q2, q2, pos, inv);
      ops::rope_forward(r, k2, k2, pos, inv);
      ops::copy_rows(r, kc2.reshape({S, KV * D}), k2.reshape({tokens, KV * D}), offsets, {.dst_slot = 1});
      ops::copy_rows(r, vc2.reshape({S, KV * D}), v.reshape({tokens, KV * D}), offsets, {.dst_slot = 1});
    });
    EXPECT_EQ(download(q2), download(q)) << dtype_name(dt);
    EXPECT_EQ(download(kc2), download(kc)) << dtype_name(dt);
    EXPECT_EQ(download(vc2), download(vc)) << dtype_name(dt);

    // Replayed at offset 7: token 2 would land on row 9, past the cache, and is skipped.
    upload(offsets, std::vector<int32_t>{0, 7});
    upload(q, q0);
    upload(kc, c0);
    upload(vc, c0);
    program.run();
    want_q = q0, want_k = c0, want_v = c0;
    ops::ref::rope_kv_cache_forward(want_q, k0, v0, want_k, want_v, pos0, std::vector<int32_t>{0, 7}, 1, D, KV, theta);
    test::expect_close(download(kc), test::rounded(want_k, dt), t, "rope_kv k_cache at offset 7", kc.shape());
    EXPECT_EQ(download(vc), want_v);
    const auto got_v = download(vc);
    EXPECT_TRUE(std::equal(got_v.begin(), got_v.begin() + 7 * KV * D, c0.begin())) << "rows before the offset kept";
  }
}

// Batched generation: three sequences of two tokens, each into its own cache at offsets[slot + b] (the last one's
// second token past its cache's end, skipped), against the CPU reference; the other rows of the caches kept.
TEST_F(RopeMiscTest, KvCacheForwardPerSequence) {
  for (DType dt : {DType::f32, DType::f16}) {
    const uint32_t seqs = 3, per = 2, tokens = seqs * per, H = 4, KV = 2, D = 32, S = 6;
    const float theta = 1e4f;
    const auto q0 = test::rounded(test::random_values(tokens * H * D, 41), dt);
    const auto k0 = test::rounded(test::random_values(tokens * KV * D, 42), dt);
    const auto v0 = test::rounded(test::random_values(tokens * KV * D, 43), dt);
    const auto c0 = test::rounded(test::random_values(seqs * S * KV * D, 44), dt);
    const std::vector<int32_t> offsets0{9, 3, 0, 5}, pos0{3, 4, 0, 1, 5, 6};
    auto inv = ops::rope_inv_freq_tensor(dev(), ops::rope_inv_freq(D, theta));
    auto pos = test::tensor_from_ints(dev(), {tokens}, pos0);
    auto offsets = test::tensor_from_ints(dev(), {4}, offsets0);
    auto q = test::tensor_from(dev(), {seqs, per, H, D}, dt, q0);
    auto k = test::tensor_from(dev(), {seqs, per, KV, D}, dt, k0), v = test::tensor_from(dev(), {seqs, per, KV, D}, dt, v0);
    auto kc = test::tensor_from(dev(), {seqs, S, KV, D}, dt, c0), vc = test::tensor_from(dev(), {seqs, S, KV, D}, dt, c0);
    test::run(dev(), [&](vk::Recorder& r) { ops::rope_kv_cache_forward(r, q, k, v, kc, vc, pos, inv, offsets, 1, per); });
    std::vector<float> want_q = q0, want_k = c0, want_v = c0;
    ops::ref::rope_kv_cache_forward(want_q, k0, v0, want_k, want_v, pos0, offsets0, 1, D, KV, theta, per);
    const double t = dt == DType::f32 ? 1e-5 : 2e-3;
    test::expect_close(download(q), test::rounded(want_q, dt), t, "per-sequence rope_kv q", q.shape());
    test::expect_close(download(kc), test::rounded(want_k, dt), t, "per-sequence rope_kv k_cache", kc.shape());
    EXPECT_EQ(download(vc), want_v) << dtype_name(dt);
    // The reference itself: sequence 0's tokens at rows 3 and 4 of cache 0, sequence 1's first at row 0 of cache 1,
    // sequence 2's first at the last row of cache 2 and its second (row 6) skipped.
    const size_t row = size_t(KV) * D;
    auto v_row = [&](const std::vector<float>& m, size_t r) { return std::vector<float>(m.begin() + long(r * row), m.begin() + long((r + 1) * row)); };
    EXPECT_EQ(v_row(want_v, 3), v_row(v0, 0));
    EXPECT_EQ(v_row(want_v, 4), v_row(v0, 1));
    EXPECT_EQ(v_row(want_v, S), v_row(v0, 2));
    EXPECT_EQ(v_row(want_v, 2 * S + 5), v_row(v0, 4));
    EXPECT_EQ(v_row(want_v, 2 * S + 4), v_row(c0, 2 * S + 4)) << "rows not written are kept";
  }
}

// The reference backward is the gradient of L = sum(dy * y(x)), by central differences in double.
TEST(RopeReference, BackwardMatchesFiniteDifferences) {
  const uint32_t tokens = 3, heads = 2, d = 8, n = tokens * heads * d;
  const std::vector<int32_t> pos{0, 17, 4096};
  std::vector<double> x(n), dy(n), y(n), dx(n);
  auto xr = test::random_values(n, 31), dyr = test::random_values(n, 32);
  for (uint32_t i = 0; i < n; ++i) x[i] = xr[i], dy[i] = dyr[i];
  ops::ref::rope_backward(std::span<double>(dx), dy, pos, d, 1e4f);
  auto loss = [&](const std::vector<double>& at) {
    ops::ref::rope_forward(std::span<double>(y), at, pos, d, 1e4f);
    double l = 0;
    for (uint32_t i = 0; i < n; ++i) l += dy[i] * y[i];
    return l;
  };
  const double h = 1e-4;
  for (uint32_t k = 0; k < n; ++k) {
    auto xp = x, xm = x;
    xp[k] += h;
    xm[k] -= h;
    EXPECT_NEAR(dx[k], (loss(xp) - loss(xm)) / (2 * h), 1e-8) << "element " << k;
  }
}

TEST_F(RopeMiscTest, BadInputsThrow) {
  auto pos = test::tensor_from_ints(dev(), {4}, std::vector<int32_t>{0, 1, 2, 3});
  auto odd = Tensor::empty(dev(), {4, 2, 7}, DType::f32);
  auto x = Tensor::empty(dev(), {4, 2, 8}, DType::f32);
  auto x_short = Tensor::empty(dev(), {3, 2, 8}, DType::f32);
  auto x_f16 = Tensor::empty(dev(), {4, 2, 8}, DType::f16);
  auto pos_f32 = Tensor::empty(dev(), {4}, DType::f32);
  auto expect_error = [&](const std::function<void(vk::Recorder&)>& body, const char* op) {
    vk::Recorder rec(dev());
    try {
      body(rec);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  expect_error([&](vk::Recorder& r) { ops::rope_forward(r, odd, odd, pos, 1e4f); }, "rope_forward");
  expect_error([&](vk::Recorder& r) { ops::rope_forward(r, x_short, x_short, pos, 1e4f); }, "rope_forward");
  expect_error([&](vk::Recorder& r) { ops::rope_forward(r, x, x, pos_f32, 1e4f); }, "rope_forward");
  expect_error([&](vk::Recorder& r) { ops::rope_forward(r, x_f16, x, pos, 1e4f); }, "rope_forward");
  expect_error([&](vk::Recorder& r) { ops::rope_backward(r, x, x, Tensor(), 1e4f); }, "rope_backward");
  expect_error([&](vk::Recorder& r) { ops::rope_backward(r, x, odd, pos, 1e4f); }, "rope_backward");
}

}  // namespace
}  // namespace ls
