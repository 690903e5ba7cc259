// The quantized weight formats on the host (tensor/quant.h):
// - the dynamic map, NF4 codes, absmax codes, scales and offset equal those of
//   tests/fixtures/make_quant_fixtures.py (torch, as bitsandbytes computes them) on two irregular weights
//   (blocks across row ends, a partial last block, two absmax groups, an outlier, a zero row); the
//   dequantized values within 1 ulp-ish (2e-7 relative: the fixture adds the offset in a second rounding);
// - the error bounds of each format on random data: nf4 within half the widest gap between levels times the
//   block's (double-quantized) absmax, q8 within half a step; q8's codes are exact on values that are multiples
//   of the step;
// - quantized_bytes is the size of what is uploaded; threads do not change a bit; non-finite weights and
//   an unknown format name are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "error.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace ls {
namespace {

nlohmann::json reference() {
  std::ifstream f(std::string(LS_SOURCE_DIR) + "/tests/fixtures/quant_reference.json");
  return nlohmann::json::parse(f);
}

std::vector<float> weights_of(const nlohmann::json& c) {
  std::vector<float> w;
  for (uint32_t bits : c.at("weights_bf16").get<std::vector<uint32_t>>()) w.push_back(bf16_to_f32(uint16_t(bits)));
  return w;
}

// Within an ulp of torch's f32 computation (which itself varies with the CPU's vector width), same order.
TEST(Quant, DynamicMapIsBitsandbytes) {
  const auto want = reference().at("dynamic_map").get<std::vector<float>>();
  ASSERT_EQ(want.size(), 256u);
  for (size_t i = 0; i < 256; ++i) EXPECT_NEAR(dynamic_map_8bit()[i], want[i], 1.2e-7 * std::fabs(want[i])) << i;
  EXPECT_TRUE(std::is_sorted(dynamic_map_8bit().begin(), dynamic_map_8bit().end()));
  EXPECT_EQ(dynamic_map_8bit()[255], 1.0f);
}

TEST(Quant, Nf4MatchesTheTorchReference) {
  const nlohmann::json ref = reference();  // (a range-for over reference().at(...) reads a destroyed temporary)
  for (const auto& c : ref.at("cases")) {
    const std::vector<float> w = weights_of(c);
    const auto& r = c.at("nf4");
    const QuantizedHost q = quantize(QuantType::nf4, w);
    EXPECT_EQ(q.codes, r.at("codes").get<std::vector<uint8_t>>());
    EXPECT_EQ(q.absmax_codes, r.at("absmax_codes").get<std::vector<uint8_t>>());
    EXPECT_EQ(q.scales, r.at("scales").get<std::vector<float>>());
    EXPECT_NEAR(q.offset, r.at("offset").get<float>(), 1e-7 * std::fabs(q.offset));
    if (r.contains("dequantized")) {
      const auto want = r.at("dequantized").get<std::vector<float>>();
      const std::vector<float> got = dequantize(q);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-7 * std::fabs(want[i]) + 1e-12) << i;
    }
  }
}

TEST(Quant, Q8MatchesTheTorchReference) {
  const nlohmann::json ref = reference();  // (a range-for over reference().at(...) reads a destroyed temporary)
  for (const auto& c : ref.at("cases")) {
    const std::vector<float> w = weights_of(c);
    const auto& r = c.at("q8");
    const QuantizedHost q = quantize(QuantType::q8, w);
    EXPECT_EQ(q.codes, r.at("codes").get<std::vector<uint8_t>>());
    EXPECT_EQ(q.scales, r.at("scales").get<std::vector<float>>());
    if (r.contains("dequantized")) {
      EXPECT_EQ(dequantize(q), r.at("dequantized").get<std::vector<float>>());
    }
  }
}

std::vector<float> random_weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.03f);
  std::vector<float> w(n);
  for (float& v : w) v = round_to(DType::bf16, normal(rng));
  return w;
}

TEST(Quant, ErrorsWithinEachFormatsBound) {
  const std::vector<float> w = random_weights(64 * 300 + 17, 3);
  float widest = 0;
  for (size_t i = 0; i + 1 < kNf4Levels.size(); ++i) widest = std::max(widest, kNf4Levels[i + 1] - kNf4Levels[i]);
  const QuantizedHost n = quantize(QuantType::nf4, w), e = quantize(QuantType::q8, w);
  const std::vector<float> dn = dequantize(n), de = dequantize(e);
  double sum_n = 0, sum_e = 0, sum_w = 0;
  std::vector<float> absmax(n.blocks(), 0.0f);
  for (size_t i = 0; i < w.size(); ++i) absmax[i / kQuantBlock] = std::max(absmax[i / kQuantBlock], std::fabs(w[i]));
  for (size_t i = 0; i < w.size(); ++i) {
    const uint64_t b = i / kQuantBlock;
    // The code is chosen with the true absmax; the value is rebuilt with the double-quantized one.
    const float dq_error = std::fabs(block_scale(n, b) - absmax[b]);
    EXPECT_LE(std::fabs(dn[i] - w[i]), 0.5f * widest * absmax[b] * 1.0001f + dq_error) << i;
    EXPECT_LE(std::fabs(de[i] - w[i]), 0.5f * block_scale(e, b) * 1.0001f) << i;
    sum_n += double(dn[i] - w[i]) * (dn[i] - w[i]);
    sum_e += double(de[i] - w[i]) * (de[i] - w[i]);
    sum_w += double(w[i]) * w[i];
  }
  const double rel_n = std::sqrt(sum_n / sum_w), rel_e = std::sqrt(sum_e / sum_w);
  std::printf("  [measured] relative RMS error: nf4 %.4f, q8 %.5f\n", rel_n, rel_e);
  EXPECT_LT(rel_n, 0.12);  // NF4 on normal weights: ~0.09
  EXPECT_LT(rel_e, 0.01);
}

TEST(Quant, Nf4PacksTheFirstValueInTheHighNibble) {
  std::vector<float> w(64, 0.0f);
  w[0] = 1.0f;    // level 15
  w[1] = -1.0f;   // level 0
  w[2] = 0.08f;   // level 8 (0.0796)
  const QuantizedHost q = quantize(QuantType::nf4, w);
  EXPECT_EQ(q.codes[0], 0xF0);
  EXPECT_EQ(q.codes[1], 0x87);  // 0.08 then 0 (level 7)
  EXPECT_EQ(q.codes.size(), 32u);
  const std::vector<float> d = dequantize(q);
  EXPECT_NEAR(d[0], 1.0f, 1e-2f);
  EXPECT_NEAR(d[1], -1.0f, 1e-2f);
  EXPECT_EQ(d[3], 0.0f);
}

TEST(Quant, ZeroBlocksStayZero) {
  std::vector<float> w(200, 0.0f);
  w[150] = 0.25f;
  for (QuantType t : {QuantType::nf4, QuantType::q8}) {
    const std::vector<float> d = dequantize(quantize(t, w));
    for (size_t i = 0; i < 128; ++i) EXPECT_EQ(d[i], 0.0f) << quant_name(t) << " " << i;
    EXPECT_NEAR(d[150], 0.25f, 1e-3f) << quant_name(t);
  }
}

TEST(Quant, SizesAndThreads) {
  const std::vector<float> w = random_weights(64 * 1000 + 3, 9);
  for (QuantType t : {QuantType::nf4, QuantType::q8}) {
    const QuantizedHost one = quantize(t, w, 1), many = quantize(t, w, 4);
    EXPECT_EQ(one.codes, many.codes) << quant_name(t);
    EXPECT_EQ(one.absmax_codes, many.absmax_codes);
    EXPECT_EQ(one.scales, many.scales);
    EXPECT_EQ(one.offset, many.offset);
    auto pad4 = [](uint64_t b) { return (b + 3) / 4 * 4; };
    const uint64_t uploaded = pad4(one.codes.size()) + pad4(one.absmax_codes.size()) + 4 * one.scales.size();
    EXPECT_EQ(quantized_bytes(t, w.size()), uploaded) << quant_name(t);
  }
  // 7B's MLP weight: NF4 with double quantization takes ~0.516 bytes a weight, q8 1.0625.
  const uint64_t n = uint64_t(18944) * 3584;
  EXPECT_NEAR(double(quantized_bytes(QuantType::nf4, n)) / double(n), 0.516, 0.001);
  EXPECT_NEAR(double(quantized_bytes(QuantType::q8, n)) / double(n), 1.0625, 0.001);
  EXPECT_EQ(quantized_bytes(QuantType::none, n, 2), 2 * n);
}

TEST(Quant, RefusesWhatItCannotQuantize) {
  std::vector<float> w(64, 0.1f);
  w[7] = std::nanf("");
  EXPECT_THROW(quantize(QuantType::nf4, w), Error);
  w[7] = INFINITY;
  EXPECT_THROW(quantize(QuantType::q8, w), Error);
  // Past the first thread's part of the check (it runs on all cores).
  std::vector<float> big(uint64_t(1) << 21, 0.1f);
  big[big.size() - 5] = std::nanf("");
  EXPECT_THROW(quantize(QuantType::nf4, big, 4), Error);
  EXPECT_FALSE(parse_quant("nf3").has_value());
  EXPECT_EQ(parse_quant("nf4"), QuantType::nf4);
  EXPECT_EQ(parse_quant("q8"), QuantType::q8);
  EXPECT_EQ(parse_quant("none"), QuantType::none);
}

}  // namespace
}  // namespace ls
