// The persistent decode layer (ops::decode_layer_forward, shaders/decode_layer.comp; LORASTUDIO_DECODE_PERSISTENT)
// against the five dispatches a decoded token's layer is otherwise: on the golden models of tests/fixtures/models
// (random f32 weights; qwen2_tiny with q/k/v biases and GQA 4/2, llama_tiny without, GQA 4/1), f32 and f16
// activations, the matrix-vector stages a column at a time and in batches of columns and loads, every decoded
// token's logits are the same bits, the greedy tokens the same, and the decode program has four dispatches a layer
// fewer. On lavapipe the layer runs as one workgroup (ops::decode_layer_groups), which takes every column, pair and attention part and never
// waits at the grid barrier; on a GPU with one workgroup a multiprocessor and with two (where its registers let them), each
// then taking every G-th piece and waiting for the others between stages.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "infer/generator.h"
#include "model/safetensors.h"
#include "ops/decode_layer.h"
#include "support/tensor_values.h"
#include "support/testing.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name; }

struct Decoded {
  std::vector<float> logits;   // every token's, one after another
  std::vector<int32_t> greedy;
  size_t dispatches = 0;       // in the decode program
};

// per_sm: the persistent layer's workgroups a multiprocessor (0: off). Each run records its programs anew (a new Generator).
Decoded decode(vk::Device& dev, const model::Model& m, std::span<const int32_t> ids, DType act, uint32_t per_sm) {
  if (per_sm) setenv("LORASTUDIO_DECODE_PERSISTENT", std::to_string(per_sm).c_str(), 1);  // read while recording
  Decoded d;
  {
    infer::Generator g(dev, m, nullptr, {.context = 128, .act = act, .profile = true, .burst = 1});
    for (int32_t id : ids) {
      g.decode(id);
      d.logits.insert(d.logits.end(), g.logits().begin(), g.logits().end());
    }
    d.dispatches = g.timings(1).size();
    g.reset();
    g.generate(ids, {.max_new_tokens = 12}, [&](int32_t id) {
      d.greedy.push_back(id);
      return true;
    });
  }
  unsetenv("LORASTUDIO_DECODE_PERSISTENT");
  return d;
}

class DecodeLayer : public test::GpuTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(DecodeLayer, WholeLayerGivesTheBitsOfItsFiveDispatches) {
  const fs::path dir = fixture(GetParam());
  const auto expected = model::SafeTensors::open(dir / "expected.safetensors");
  const std::vector<int32_t> ids = test::tensor_values<int32_t>(expected, "ids");
  const auto m = model::Model::load(dev(), dir);
  const uint32_t layers = m.config.num_layers;
  setenv("LORASTUDIO_DECODE_PERSISTENT", "1", 1);
  const bool taken = ops::decode_layer_groups(dev()) > 0;
  unsetenv("LORASTUDIO_DECODE_PERSISTENT");
  if (!taken) GTEST_SKIP() << "the device has no device-scope atomics or subgroups of 8 to 64 lanes";
  for (DType act : {DType::f32, DType::f16}) {
    const Decoded base = decode(dev(), m, ids, act, 0);
    ASSERT_EQ(base.logits.size(), ids.size() * m.config.vocab_size);
    ASSERT_EQ(base.greedy.size(), 12u);
    // Two workgroups a multiprocessor on a GPU: the layer takes two only where the driver's register count says
    // both fit (ops::detail::resident_per_multiprocessor), else one, and the same bits either way
    const uint32_t most = dev().report().type != "cpu" ? 2 : 1;
    for (uint32_t per_sm = 1; per_sm <= most; ++per_sm)
    for (const char* batch : {"1x1", "3x2"}) {  // columns a subgroup takes at once x pieces a lane loads at once
      setenv("LORASTUDIO_DECODE_PERSISTENT", std::to_string(per_sm).c_str(), 1);
      const bool batched = std::string(batch) != "1x1";
      setenv("LORASTUDIO_DECODE_COLS", batched ? "3" : "1", 1);
      setenv("LORASTUDIO_DECODE_DEPTH", batched ? "2" : "1", 1);
      if (batched) setenv("LORASTUDIO_DECODE_ATTN_BATCH", "3", 1);  // 3 loads in flight in the attention, not 8
      const std::string what = GetParam() + ", " + dtype_name(act) + " activations, " +
                               std::to_string(ops::decode_layer_groups(dev())) + " workgroups, batches " + batch;
      const Decoded got = decode(dev(), m, ids, act, per_sm);
      unsetenv("LORASTUDIO_DECODE_COLS");
      unsetenv("LORASTUDIO_DECODE_DEPTH");
      unsetenv("LORASTUDIO_DECODE_ATTN_BATCH");
      EXPECT_EQ(got.dispatches + 4 * layers, base.dispatches) << what << ": four dispatches a layer fewer";
      ASSERT_EQ(got.logits.size(), base.logits.size()) << what;
      size_t differ = 0, first = got.logits.size();
      for (size_t i = 0; i < got.logits.size(); ++i)
        if (std::memcmp(&got.logits[i], &base.logits[i], sizeof(float)) != 0 && differ++ == 0) first = i;
      EXPECT_EQ(differ, 0u) << what << ": logits differ in " << differ << " places, the first at token "
                            << (first / m.config.vocab_size) << ": " << got.logits[first % got.logits.size()]
                            << " against " << base.logits[first % base.logits.size()];
      EXPECT_EQ(got.greedy, base.greedy) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DecodeLayer, ::testing::Values("qwen2_tiny", "llama_tiny"));

class DecodeLayerSwitch : public test::GpuTest {};

// Opt-in: without LORASTUDIO_DECODE_PERSISTENT a layer records its five dispatches.
TEST_F(DecodeLayerSwitch, OffByDefault) {
  unsetenv("LORASTUDIO_DECODE_PERSISTENT");
  EXPECT_EQ(ops::decode_layer_groups(dev()), 0u);
}

// Two 256-invocation workgroups share an SM's 65,536 registers only at up to 128 registers an invocation; a count the
// driver does not give takes one.
TEST(DecodeLayerResidency, TwoAMultiprocessorOnlyWhereTheRegistersFit) {
  using ops::detail::resident_per_multiprocessor;
  EXPECT_EQ(resident_per_multiprocessor(0, 96), 0u);
  EXPECT_EQ(resident_per_multiprocessor(1, 255), 1u);
  EXPECT_EQ(resident_per_multiprocessor(2, 120), 2u);
  EXPECT_EQ(resident_per_multiprocessor(2, 128), 2u);
  EXPECT_EQ(resident_per_multiprocessor(2, 129), 1u);
  EXPECT_EQ(resident_per_multiprocessor(2, 214), 1u);
  EXPECT_EQ(resident_per_multiprocessor(2, std::nullopt), 1u);
  EXPECT_EQ(resident_per_multiprocessor(4, 64), 4u);
  EXPECT_EQ(resident_per_multiprocessor(4, 96), 2u);
}

}  // namespace
}  // namespace ls
