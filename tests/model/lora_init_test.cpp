// PEFT-style LoRA initialisation: the generator against SplitMix64's published first outputs, the float
// conversion at its ends, the kaiming bound, golden values from an independent (Python) evaluation of the
// documented recipe, the distribution, determinism, and the adapter init_lora builds on the tiny model.
#include "model/lora_init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/training.h"
#include "support/testing.h"

namespace ls::model {
namespace {

TEST(LoraInitValues, SplitMix64KnownOutputs) {
  SplitMix64 rng{0};  // splitmix64.c (Vigna) seeded with 0
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

TEST(LoraInitValues, UniformConversionEnds) {
  EXPECT_EQ(uniform_symmetric(0, 0.25f), -0.25f);                       // u = 0
  EXPECT_EQ(uniform_symmetric(~0ull, 1.0f), 1.0f - 0x1p-23f);           // u = 1 - 2^-24: below the bound
  EXPECT_EQ(uniform_symmetric(1ull << 63, 0.25f), 0.0f);                // u = 1/2
  EXPECT_EQ(uniform_symmetric((1ull << 40) - 1, 1.0f), -1.0f);          // the low 40 bits are not used
}

TEST(LoraInitValues, BoundIsKaimingUniformWithASqrt5) {
  for (uint32_t in : {1u, 3u, 64u, 160u, 896u, 4864u}) {
    const double a = std::sqrt(5.0), gain = std::sqrt(2.0 / (1.0 + a * a));
    EXPECT_NEAR(lora_a_bound(in), gain * std::sqrt(3.0 / in), 1e-7) << in;
  }
  EXPECT_EQ(lora_a_bound(64), 0.125f);
}

// The documented recipe evaluated independently in Python (mix64, SplitMix64, u = (x >> 40) / 2^24,
// f32(b * f32(2u - 1)) with b = f32(1 / sqrt(3))) for seed 42, layer 1, down_proj (index 6), A [2, 3].
TEST(LoraInitValues, GoldenValues) {
  const uint32_t want[] = {0x3d1d1af1, 0xbe99fde6, 0xbb635299, 0x3e03b6e1, 0xbee03007, 0x3eef98dd};
  const auto got = lora_a_values(2, 3, 42, 1, LoraTarget::down_proj);
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), want[i]) << i;
}

TEST(LoraInitValues, DistributionAndDeterminism) {
  const uint32_t rank = 16, in = 896;
  const auto a = lora_a_values(rank, in, 7, 3, LoraTarget::q_proj);
  const float bound = lora_a_bound(in);
  double sum = 0, sum_sq = 0;
  for (float x : a) {
    ASSERT_GE(x, -bound);
    ASSERT_LT(x, bound);
    sum += x;
    sum_sq += double(x) * x;
  }
  const double n = double(a.size()), var = double(bound) * bound / 3.0;  // of U(-b, b)
  EXPECT_LT(std::fabs(sum / n), 4 * std::sqrt(var / n));
  EXPECT_NEAR(sum_sq / n / var, 1.0, 0.03);
  EXPECT_EQ(a, lora_a_values(rank, in, 7, 3, LoraTarget::q_proj));
  EXPECT_NE(a, lora_a_values(rank, in, 8, 3, LoraTarget::q_proj));
  EXPECT_NE(a, lora_a_values(rank, in, 7, 4, LoraTarget::q_proj));
  EXPECT_NE(a, lora_a_values(rank, in, 7, 3, LoraTarget::k_proj));
}

class LoraInit : public test::GpuTest {
 protected:
  ModelConfig config = load_config(test::fixtures_dir() / "models/qwen2_tiny");
};

TEST_F(LoraInit, AdapterShapesValuesAndZeroB) {
  const std::vector<LoraTarget> targets = {LoraTarget::q_proj, LoraTarget::v_proj, LoraTarget::down_proj};
  LoraAdapter a = init_lora(dev(), config, targets, 4, 8.0f, false, 0.05f, 123);
  EXPECT_EQ(a.rank, 4u);
  EXPECT_EQ(a.alpha, 8.0f);
  EXPECT_EQ(a.dropout, 0.05f);
  EXPECT_FALSE(a.rslora);
  EXPECT_EQ(a.scale(), 2.0f);
  EXPECT_EQ(a.targets, targets);
  ASSERT_EQ(a.layers.size(), config.num_layers);
  for (uint32_t layer = 0; layer < config.num_layers; ++layer) {
    for (size_t i = 0; i < kLoraTargetCount; ++i) {
      const LoraTarget t = LoraTarget(i);
      const LoraPair& p = a.at(layer, t);
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) {
        EXPECT_FALSE(p.defined()) << target_name(t);
        continue;
      }
      const auto [out, in] = target_shape(config, t);
      ASSERT_TRUE(p.defined());
      EXPECT_EQ(p.a.shape(), (Shape{4, in}));
      EXPECT_EQ(p.b.shape(), (Shape{out, 4}));
      EXPECT_EQ(p.a.dtype(), DType::f32);
      EXPECT_EQ(p.b.dtype(), DType::f32);
      EXPECT_EQ(download(p.a), lora_a_values(4, in, 123, layer, t));
      const auto b = download(p.b);
      EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](float x) { return x == 0.0f; }));
    }
  }
  // rsLoRA: alpha / sqrt(r).
  EXPECT_EQ(init_lora(dev(), config, {LoraTarget::o_proj}, 4, 8.0f, true, 0.0f, 1).scale(), 4.0f);
}

// flat_like: the same matrices as views of one allocation, in layer, target, A-then-B order, each at a multiple of
// 64 floats, with zero padding; a second flat copy of the same adapter has the same layout; without
// copy_values every matrix is zero.
TEST_F(LoraInit, FlatCopyHoldsEveryMatrixInOneAllocation) {
  LoraAdapter a = init_lora(dev(), config, {LoraTarget::q_proj, LoraTarget::down_proj}, 3, 8.0f, false, 0.0f, 5);
  for (auto& layer : a.layers)  // non-zero B too
    for (auto& p : layer)
      if (p.defined()) upload(p.b, test::random_values(p.b.numel(), 7));
  const LoraAdapter flat = flat_like(dev(), a, true), zeros = flat_like(dev(), a, false);
  ASSERT_TRUE(flat.storage.defined());
  ASSERT_TRUE(zeros.storage.defined());
  EXPECT_FALSE(a.storage.defined());
  EXPECT_EQ(flat.storage.numel(), zeros.storage.numel());
  const std::vector<float> whole = download(flat.storage);
  std::vector<bool> covered(whole.size(), false);
  uint64_t next = 0;  // where the next matrix must start
  for (size_t layer = 0; layer < a.layers.size(); ++layer)
    for (size_t t = 0; t < kLoraTargetCount; ++t) {
      if (!a.layers[layer][t].defined()) continue;
      for (bool b : {false, true}) {
        const Tensor& orig = b ? a.layers[layer][t].b : a.layers[layer][t].a;
        const Tensor& view = b ? flat.layers[layer][t].b : flat.layers[layer][t].a;
        const Tensor& zero = b ? zeros.layers[layer][t].b : zeros.layers[layer][t].a;
        const uint64_t at = (view.byte_offset() - flat.storage.byte_offset()) / 4;
        EXPECT_EQ(at, next) << "layer " << layer << " " << target_name(LoraTarget(t));
        EXPECT_EQ(at % 64, 0u);
        EXPECT_EQ(zero.byte_offset() - zeros.storage.byte_offset(), at * 4) << "the same layout";
        EXPECT_EQ(view.shape(), orig.shape());
        EXPECT_EQ(download(view), download(orig));
        const auto z = download(zero);
        EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](float x) { return x == 0.0f; }));
        for (uint64_t i = at; i < at + orig.numel(); ++i) covered[i] = true;
        next = (at + orig.numel() + 63) / 64 * 64;
      }
    }
  EXPECT_EQ(next, whole.size());
  for (size_t i = 0; i < whole.size(); ++i)
    if (!covered[i]) {
      ASSERT_EQ(whole[i], 0.0f) << "padding at " << i;
    }
}

TEST_F(LoraInit, ValuesDoNotDependOnTheOtherTargets) {
  LoraAdapter few = init_lora(dev(), config, {LoraTarget::q_proj, LoraTarget::v_proj}, 4, 8.0f, false, 0.0f, 9);
  LoraAdapter many = init_lora(dev(), config, {LoraTarget::down_proj, LoraTarget::v_proj, LoraTarget::k_proj,
                                               LoraTarget::q_proj}, 4, 8.0f, false, 0.0f, 9);
  EXPECT_EQ(download(few.at(1, LoraTarget::q_proj).a), download(many.at(1, LoraTarget::q_proj).a));
  EXPECT_EQ(download(few.at(0, LoraTarget::v_proj).a), download(many.at(0, LoraTarget::v_proj).a));
  EXPECT_NE(download(few.at(0, LoraTarget::q_proj).a), download(few.at(1, LoraTarget::q_proj).a));
}

TEST_F(LoraInit, BadArgumentsThrow) {
  const std::vector<LoraTarget> q = {LoraTarget::q_proj};
  EXPECT_TRUE(test::throws_error([&] { init_lora(dev(), config, q, 0, 8, false, 0, 1); }, {"init_lora", "rank"}));
  EXPECT_TRUE(test::throws_error([&] { init_lora(dev(), config, q, 4, 0, false, 0, 1); }, {"init_lora", "alpha"}));
  EXPECT_TRUE(test::throws_error([&] { init_lora(dev(), config, q, 4, 8, false, 1, 1); }, {"init_lora", "dropout"}));
  EXPECT_TRUE(test::throws_error([&] { init_lora(dev(), config, {}, 4, 8, false, 0, 1); }, {"init_lora", "target"}));
  EXPECT_TRUE(test::throws_error(
      [&] { init_lora(dev(), config, {LoraTarget::q_proj, LoraTarget::q_proj}, 4, 8, false, 0, 1); },
      {"init_lora", "\"q_proj\" is listed twice"}));
}

}  // namespace
}  // namespace ls::model
