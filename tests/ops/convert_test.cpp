// convert_forward against the reference (ls::f32_to_f16 / f32_to_bf16, round to nearest even like
// torch): the output bits must be equal, tolerance 0, for every direction. Inputs: every f16 and every
// bf16 bit pattern; for f32, random bit patterns over the whole range and over f16's range, exact ties
// of f16 and bf16 rounding (normal and subnormal), and named specials (±0, ±inf, NaNs, f16 overflow,
// subnormals of either type).
#include "ops/convert.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "support/testing.h"

namespace ls {
namespace {

std::vector<uint8_t> to_bytes(std::span<const uint32_t> bits, DType t) {
  std::vector<uint8_t> bytes(bits.size() * dtype_size(t));
  for (size_t i = 0; i < bits.size(); ++i) {
    if (t == DType::f32)
      std::memcpy(bytes.data() + 4 * i, &bits[i], 4);
    else {
      uint16_t h = uint16_t(bits[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<uint32_t> from_bytes(std::span<const uint8_t> bytes, DType t) {
  std::vector<uint32_t> bits(bytes.size() / dtype_size(t));
  for (size_t i = 0; i < bits.size(); ++i) {
    if (t == DType::f32)
      std::memcpy(&bits[i], bytes.data() + 4 * i, 4);
    else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      bits[i] = h;
    }
  }
  return bits;
}

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }

// f32 inputs: specials, ties, and random patterns (none of them ±0 but the named ones).
std::vector<uint32_t> f32_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<uint32_t> v;
  // clang-format off
  const float named[] = {
      0.0f, -0.0f, inf, -inf, 1.0f, -1.0f, 1e6f, -1e30f,
      65504.0f, 65519.0f, 65520.0f, -65520.0f, 65536.0f,  // f16's max, and past it (65520 ties to inf)
      std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
      std::numeric_limits<float>::denorm_min(), -1e-40f,  // f32 subnormals
      std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -25),  // f16 subnormals
      std::ldexp(1.0f, -26), std::ldexp(1.5f, -25), std::nextafter(std::ldexp(1.0f, -25), 1.0f),
      1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11),  // f16 ties
      1.0f + std::ldexp(1.0f, -8), 1.0f + std::ldexp(3.0f, -8),    // bf16 ties
      2047.5f, 2048.5f};
  // clang-format on
  for (float f : named) v.push_back(f32_bits(f));
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa01234u, 0xff8fffffu, 0x7fffffffu}) v.push_back(nan);
  for (uint32_t bits : {0x00000001u, 0x807fffffu, 0x00400000u, 0x7f7fffffu, 0x477ff000u, 0x477fefffu})
    v.push_back(bits);

  std::mt19937 gen(1234);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_int_distribution<uint32_t> f16_exponent(127 - 26, 127 + 16);  // below f16's subnormals to past its max
  auto add = [&](uint32_t bits) { v.push_back((bits & 0x7fffffffu) == 0 ? bits | 1u : bits); };
  for (int i = 0; i < 20000; ++i) add(any(gen));
  for (int i = 0; i < 20000; ++i) add((any(gen) & 0x807fffffu) | (f16_exponent(gen) << 23));
  for (int i = 0; i < 5000; ++i) {  // exact ties
    uint32_t r = any(gen);
    add((r & 0xffff0000u) | 0x8000u);                              // bf16 tie
    add((r & 0x807fe000u) | (f16_exponent(gen) << 23) | 0x1000u);  // f16 tie (normal)
    uint32_t shift = 14u + (r % 10u), e = 126u - shift;            // f16 subnormal tie
    add((r & 0x80000000u) | (e << 23) | ((any(gen) & 0x7fffffu) >> shift << shift) | (1u << (shift - 1u)));
  }
  return v;
}

std::vector<uint32_t> all_16bit_patterns() {
  std::vector<uint32_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = i;
  return v;
}

class ConvertTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<DType, DType>> {};

TEST_P(ConvertTest, BitsEqualReference) {
  auto [from, to] = GetParam();
  const auto x_bits = from == DType::f32 ? f32_inputs() : all_16bit_patterns();
  const uint32_t n = uint32_t(x_bits.size());
  auto x = Tensor::empty(dev(), {n}, from, "convert input");
  upload_bytes(x, to_bytes(x_bits, from));
  auto y = test::poisoned(dev(), {n}, to);
  test::run(dev(), [&](vk::Recorder& rec) { ops::convert_forward(rec, y.t, x); });
  const auto got = from_bytes(download_bytes(y.t), to);
  const auto want = ops::ref::convert_forward(x_bits, from, to);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (got[i] == want[i]) continue;
    if (++bad <= 8)
      ADD_FAILURE() << std::hex << "input 0x" << x_bits[i] << ": got 0x" << got[i] << ", want 0x" << want[i];
  }
  EXPECT_EQ(bad, 0u) << "of " << n << " elements";
  y.expect_guards_intact("convert_forward");
}

INSTANTIATE_TEST_SUITE_P(Directions, ConvertTest,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, DType>>& c) {
                           return std::string(dtype_name(std::get<0>(c.param))) + "_to_" +
                                  dtype_name(std::get<1>(c.param));
                         });

// A few conversions whose torch results are known, so the reference itself is pinned down.
TEST(ConvertReference, KnownTorchResults) {
  auto one = [](float f, DType to) {
    return ops::ref::convert_forward(std::vector<uint32_t>{f32_bits(f)}, DType::f32, to)[0];
  };
  EXPECT_EQ(one(65504.0f, DType::f16), 0x7bffu);
  EXPECT_EQ(one(65519.0f, DType::f16), 0x7bffu);
  EXPECT_EQ(one(65520.0f, DType::f16), 0x7c00u);               // halfway to 65536: ties to even = inf
  EXPECT_EQ(one(std::ldexp(1.0f, -24), DType::f16), 0x0001u);  // smallest subnormal
  EXPECT_EQ(one(std::ldexp(1.0f, -25), DType::f16), 0x0000u);  // halfway to it: to even = 0
  EXPECT_EQ(one(std::ldexp(3.0f, -25), DType::f16), 0x0002u);  // 1.5 ulp: to even = 2
  EXPECT_EQ(one(1.0f + std::ldexp(1.0f, -11), DType::f16), 0x3c00u);
  EXPECT_EQ(one(1.0f + std::ldexp(3.0f, -11), DType::f16), 0x3c02u);
  EXPECT_EQ(one(1.0f + std::ldexp(1.0f, -8), DType::bf16), 0x3f80u);
  EXPECT_EQ(one(1.0f + std::ldexp(3.0f, -8), DType::bf16), 0x3f82u);
  EXPECT_EQ(one(std::numeric_limits<float>::max(), DType::bf16), 0x7f80u);
  EXPECT_EQ(one(-0.0f, DType::f16), 0x8000u);
}

class ConvertMiscTest : public test::GpuTest {};

TEST_F(ConvertMiscTest, MultiDimensionalValues) {
  const Shape shape{3, 7, 33};
  auto x0 = test::random_values(3 * 7 * 33, 5, 100.0f);
  auto x = test::tensor_from(dev(), shape, DType::f32, x0);
  auto h = test::poisoned(dev(), shape, DType::f16);
  auto b = test::poisoned(dev(), shape, DType::bf16);
  auto back = test::poisoned(dev(), shape, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::convert_forward(rec, h.t, x);
    ops::convert_forward(rec, b.t, h.t);
    ops::convert_forward(rec, back.t, b.t);
  });
  test::expect_close(download(h.t), test::rounded(x0, DType::f16), 0.0, "f32 to f16", shape);
  auto want = test::rounded(test::rounded(x0, DType::f16), DType::bf16);
  test::expect_close(download(b.t), want, 0.0, "f16 to bf16", shape);
  test::expect_close(download(back.t), want, 0.0, "bf16 to f32", shape);
  h.expect_guards_intact("f32 to f16");
  b.expect_guards_intact("f16 to bf16");
  back.expect_guards_intact("bf16 to f32");
}

// Three f32 matrices side by side in one f16 matrix (the gradients of q, k and v at the 0.5B shape's widths, odd
// row counts and widths too; x0 as [B, T, H, D]): every element the reference's bits, the guards intact.
TEST_F(ConvertMiscTest, ConcatColumnsConvertsEachPartInItsPlace) {
  for (const auto& [rows, n0, n1, n2] :
       std::vector<std::array<uint32_t, 4>>{{37, 896, 128, 128}, {5, 3, 7, 1}, {64, 64, 16, 33}}) {
    auto a0 = test::random_values(size_t(rows) * n0, 11, 70000.0f);  // past f16's range too: inf, as convert
    auto a1 = test::random_values(size_t(rows) * n1, 12, 3.0f);
    auto a2 = test::random_values(size_t(rows) * n2, 13, 1e-5f);    // f16 subnormals
    auto x0 = test::tensor_from(dev(), {1, rows, 1, n0}, DType::f32, a0);
    auto x1 = test::tensor_from(dev(), {rows, n1}, DType::f32, a1);
    auto x2 = test::tensor_from(dev(), {rows, n2}, DType::f32, a2);
    const uint32_t cols = n0 + n1 + n2;
    auto y = test::poisoned(dev(), {rows, cols}, DType::f16);
    test::run(dev(), [&](vk::Recorder& rec) { ops::concat_cols_forward(rec, y.t, x0, x1, x2); });
    std::vector<float> want(size_t(rows) * cols);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < n0; ++c) want[size_t(r) * cols + c] = a0[size_t(r) * n0 + c];
      for (uint32_t c = 0; c < n1; ++c) want[size_t(r) * cols + n0 + c] = a1[size_t(r) * n1 + c];
      for (uint32_t c = 0; c < n2; ++c) want[size_t(r) * cols + n0 + n1 + c] = a2[size_t(r) * n2 + c];
    }
    test::expect_close(download(y.t), test::rounded(want, DType::f16), 0.0, "concat_cols_forward", y.t.shape());
    y.expect_guards_intact("concat_cols_forward");
    auto y32 = test::poisoned(dev(), {rows, cols}, DType::f32);  // f32: the values as they are
    test::run(dev(), [&](vk::Recorder& rec) { ops::concat_cols_forward(rec, y32.t, x0, x1, x2); });
    test::expect_close(download(y32.t), want, 0.0, "concat_cols_forward f32", y32.t.shape());
    y32.expect_guards_intact("concat_cols_forward f32");
  }
  auto x = Tensor::empty(dev(), {4, 8}, DType::f32), odd = Tensor::empty(dev(), {3, 8}, DType::f32);
  auto h = Tensor::empty(dev(), {4, 8}, DType::f16);
  for (auto body : std::vector<std::function<void(vk::Recorder&)>>{
           [&](vk::Recorder& r) { ops::concat_cols_forward(r, Tensor::empty(dev(), {4, 23}, DType::f16), x, x, x); },
           [&](vk::Recorder& r) { ops::concat_cols_forward(r, Tensor::empty(dev(), {4, 24}, DType::bf16), x, x, x); },
           [&](vk::Recorder& r) { ops::concat_cols_forward(r, Tensor::empty(dev(), {4, 24}, DType::f16), x, odd, x); },
           [&](vk::Recorder& r) { ops::concat_cols_forward(r, Tensor::empty(dev(), {4, 24}, DType::f16), x, h, x); }}) {
    vk::Recorder rec(dev());
    try {
      body(rec);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("concat_cols_forward"), std::string::npos) << e.what();
    }
  }
}

TEST_F(ConvertMiscTest, BadInputsThrow) {
  auto x = Tensor::empty(dev(), {4, 8}, DType::f32);
  auto y_wrong = Tensor::empty(dev(), {8, 4}, DType::f16);
  auto ints = Tensor::empty(dev(), {4, 8}, DType::i32);
  for (auto body : std::vector<std::function<void(vk::Recorder&)>>{
           [&](vk::Recorder& r) { ops::convert_forward(r, y_wrong, x); },
           [&](vk::Recorder& r) { ops::convert_forward(r, ints, x); },
           [&](vk::Recorder& r) { ops::convert_forward(r, x, ints); },
           [&](vk::Recorder& r) { ops::convert_forward(r, x, Tensor()); }}) {
    vk::Recorder rec(dev());
    try {
      body(rec);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("convert_forward"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ls
