// What training keeps of each layer (model/layer_acts.h), read off the plan table without a device: the MLP's
// inputs that only an adapter's backward reads (h2 for gate_proj and up_proj, silu*up for down_proj) are kept
// per layer only when such an adapter is there, Phi-3's fused gate_up_proj counting as gate and up; the rest
// is the same either way. memory_plan_test checks these bytes against what a run allocates.
#include "model/layer_acts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "vk/memory.h"

namespace ls::model {
namespace {

using T = LoraTarget;

ModelSpec spec_of(const char* arch) {
  const nlohmann::json j = {{"architectures", {arch}}, {"hidden_size", 48},       {"intermediate_size", 80},
                            {"num_hidden_layers", 3},  {"num_attention_heads", 6}, {"num_key_value_heads", 2},
                            {"vocab_size", 100}};
  return model_spec(parse_config(j, "config.json"));
}

uint64_t per_layer(const ModelSpec& s, std::vector<LoraTarget> adapted, F16Operands f16 = {}) {
  return layer_acts_bytes(s, adapted, 4, 2, 16, DType::f32, ActsPlan::training, f16).per_layer;
}

TEST(LayerActs, MlpInputsAreKeptOnlyForTheirAdapters) {
  const ModelSpec s = spec_of("Qwen2ForCausalLM");
  const uint32_t M = 2 * 16, C = 48, I = 80;
  const uint64_t h2 = vk::Memory::footprint(uint64_t(M) * C * 4), gated = vk::Memory::footprint(uint64_t(M) * I * 4);
  const uint64_t lora_t = vk::Memory::footprint(uint64_t(M) * 4 * 4);
  const uint64_t attention_only = per_layer(s, {T::q_proj, T::v_proj});
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj, T::gate_proj}), attention_only + h2 + lora_t);
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj, T::up_proj}), attention_only + h2 + lora_t);
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj, T::down_proj}), attention_only + gated + lora_t);
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj, T::gate_proj, T::up_proj, T::down_proj}),
            attention_only + h2 + gated + 3 * lora_t);
  // In f16 where the products round to f16 (gated when down_proj has no adapter): not kept either way.
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj}, {.gated = true}), attention_only);

  const ModelSpec phi3 = spec_of("Phi3ForCausalLM");
  EXPECT_EQ(per_layer(phi3, {T::qkv_proj, T::gate_up_proj}), per_layer(phi3, {T::qkv_proj}) + h2 + lora_t);
}

// Kept in f16 (F16Operands::normed, ::attention): h1 (and h2 where kept), q, k, v and the attention's output take
// half their f32 bytes; the residual stream, statistics and lora_t stay f32.
TEST(LayerActs, F16OperandsHalveTheNormedAndAttentionTensors) {
  const ModelSpec s = spec_of("Qwen2ForCausalLM");
  const uint32_t M = 2 * 16, C = 48, D = 8, H = 6, KV = 2;
  auto half = [](uint64_t f32_bytes) { return vk::Memory::footprint(f32_bytes) - vk::Memory::footprint(f32_bytes / 2); };
  const uint64_t f32 = per_layer(s, {T::q_proj, T::v_proj});
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj}, {.normed = true}), f32 - half(uint64_t(M) * C * 4));
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj, T::gate_proj}, {.normed = true}),
            per_layer(s, {T::q_proj, T::v_proj, T::gate_proj}) - 2 * half(uint64_t(M) * C * 4));
  EXPECT_EQ(per_layer(s, {T::q_proj, T::v_proj}, {.attention = true}),
            f32 - 2 * half(uint64_t(M) * H * D * 4) - 2 * half(uint64_t(M) * KV * D * 4));
}

// Which tensors a device keeps in f16: none where the products are f32; with f16 products the normed inputs,
// and q, k, v and the attention's output unless a layer has a sliding window (the f32 backward kernels).
TEST(LayerActs, F16OperandsFollowTheProductsAndTheWindow) {
  const std::vector<LoraTarget> qv{T::q_proj, T::v_proj};
  const F16Operands none = f16_operands(false, spec_of("Qwen2ForCausalLM"), qv);
  EXPECT_FALSE(none.normed || none.attention || none.gated || none.gate_up);
  const nlohmann::json j = {{"architectures", {"MistralForCausalLM"}}, {"hidden_size", 64},
                            {"intermediate_size", 80}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                            {"num_key_value_heads", 2}, {"vocab_size", 100}, {"sliding_window", 8}};
  const F16Operands windowed = f16_operands(true, model_spec(parse_config(j, "config.json")), qv);
  EXPECT_TRUE(windowed.normed);
  EXPECT_FALSE(windowed.attention);
}

}  // namespace
}  // namespace ls::model
