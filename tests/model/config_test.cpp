// config.json: the three real configs we target (Qwen2.5-0.5B, Llama-3.2-1B-Instruct, Mistral-7B-v0.1),
// transformers' defaults for absent keys, every refusal naming the file and key, and rope_inv_freq against
// a double-precision computation (and, when tests/fixtures/model_io_reference.json exists, against the bits
// transformers itself produced).
#include "model/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "infer/chat_session.h"
#include "model/model_files.h"
#include "ops/rope.h"
#include "util/json_keys.h"

namespace ls::model {
namespace {

using nlohmann::json;
using test::throws_error;

// config.json of Qwen/Qwen2.5-0.5B.
const json kQwen25 = json::parse(R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
  "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
  "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
  "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})");

// config.json of meta-llama/Llama-3.2-1B-Instruct.
const json kLlama32 = json::parse(R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})");

// config.json of mistralai/Mistral-7B-v0.1.
const json kMistral7B = json::parse(R"({
  "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})");

// config.json of Qwen/Qwen3-0.6B: head_dim 128 with hidden 1024 and 16 heads (H·D = 2048 != C).
const json kQwen3 = json::parse(R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02,
  "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936})");

// config.json of microsoft/Phi-3.5-mini-instruct, its 48 longrope factors of each list replaced by
// made-up values of the same count (head_dim 96 / 2).
json phi35_mini() {
  json j = json::parse(R"({
    "architectures": ["Phi3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 1,
    "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "sliding_window": 262144, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.3", "use_cache": true, "vocab_size": 32064})");
  json s = json::array(), l = json::array();
  for (int i = 0; i < 48; ++i) s.push_back(1.0 + 0.01 * i), l.push_back(1.0 + 0.5 * i);
  j["rope_scaling"] = {{"long_factor", l}, {"short_factor", s}, {"type", "longrope"}};
  return j;
}

// Only the required keys.
json minimal(const char* architecture) {
  return json{{"architectures", {architecture}}, {"hidden_size", 256},       {"num_hidden_layers", 2},
              {"num_attention_heads", 8},        {"intermediate_size", 512}, {"vocab_size", 1000}};
}

ModelConfig parse(const json& j) { return parse_config(j, "config.json"); }

TEST(Config, Qwen25_05B) {
  const ModelConfig c = parse(kQwen25);
  EXPECT_EQ(c.arch, Architecture::Qwen2);
  EXPECT_EQ(c.architecture_name, "Qwen2ForCausalLM");
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_EQ(c.vocab_size, 151936u);
  EXPECT_EQ(c.hidden_size, 896u);
  EXPECT_EQ(c.intermediate_size, 4864u);
  EXPECT_EQ(c.num_layers, 24u);
  EXPECT_EQ(c.num_heads, 14u);
  EXPECT_EQ(c.num_kv_heads, 2u);
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_EQ(c.max_position_embeddings, 32768u);
  EXPECT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_FALSE(c.sliding_window.has_value());  // use_sliding_window false
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{151643});
  EXPECT_EQ(c.torch_dtype, "bfloat16");
}

TEST(Config, Llama32_1B) {
  const ModelConfig c = parse(kLlama32);
  EXPECT_EQ(c.arch, Architecture::Llama);
  EXPECT_EQ(c.architecture_name, "LlamaForCausalLM");
  EXPECT_EQ(c.vocab_size, 128256u);
  EXPECT_EQ(c.hidden_size, 2048u);
  EXPECT_EQ(c.intermediate_size, 8192u);
  EXPECT_EQ(c.num_layers, 16u);
  EXPECT_EQ(c.num_heads, 32u);
  EXPECT_EQ(c.num_kv_heads, 8u);
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_EQ(c.max_position_embeddings, 131072u);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 32.0f);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0f);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192u);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
}

TEST(Config, Mistral7B) {
  const ModelConfig c = parse(kMistral7B);
  EXPECT_EQ(c.arch, Architecture::Mistral);
  EXPECT_EQ(c.architecture_name, "MistralForCausalLM");
  EXPECT_EQ(c.vocab_size, 32000u);
  EXPECT_EQ(c.hidden_size, 4096u);
  EXPECT_EQ(c.intermediate_size, 14336u);
  EXPECT_EQ(c.num_layers, 32u);
  EXPECT_EQ(c.num_heads, 32u);
  EXPECT_EQ(c.num_kv_heads, 8u);
  EXPECT_EQ(c.head_dim, 128u);
  EXPECT_EQ(c.max_position_embeddings, 32768u);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias);
  EXPECT_EQ(c.sliding_window, 4096u);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
}

// What transformers' Qwen2Config / LlamaConfig / MistralConfig fill in for absent keys.
TEST(Config, Qwen3_06B) {
  const ModelConfig c = parse(kQwen3);
  EXPECT_EQ(c.arch, Architecture::Qwen3);
  EXPECT_EQ(c.architecture_name, "Qwen3ForCausalLM");
  EXPECT_EQ(c.hidden_size, 1024u);
  EXPECT_EQ(c.num_heads, 16u);
  EXPECT_EQ(c.num_kv_heads, 8u);
  EXPECT_EQ(c.head_dim, 128u);  // from the config, not hidden / heads (64)
  EXPECT_EQ(c.num_layers, 28u);
  EXPECT_EQ(c.max_position_embeddings, 40960u);
  EXPECT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{151645});
  json biased = kQwen3;
  biased["attention_bias"] = true;  // Qwen3Attention: bias on q, k, v and o alike
  EXPECT_TRUE(parse(biased).qkv_bias && parse(biased).o_bias);
  EXPECT_FALSE(parse(biased).mlp_bias);
  json windowed = kQwen3;
  windowed["use_sliding_window"] = true;
  windowed["sliding_window"] = 4096;
  EXPECT_EQ(parse(windowed).sliding_window, 4096u);
  EXPECT_EQ(parse(windowed).max_window_layers, 28u);
  // Qwen3Config's defaults: head_dim 128 (whatever hidden / heads is), 32 kv heads, 32768 positions.
  json q = minimal("Qwen3ForCausalLM");
  q["num_attention_heads"] = 32;
  const ModelConfig d = parse(q);
  EXPECT_EQ(d.head_dim, 128u);
  EXPECT_EQ(d.num_kv_heads, 32u);
  EXPECT_EQ(d.max_position_embeddings, 32768u);
  EXPECT_FALSE(d.qkv_bias);
  json from_type = minimal("LlamaForCausalLM");
  from_type.erase("architectures");
  from_type["model_type"] = "qwen3";
  from_type["num_key_value_heads"] = 2;
  EXPECT_EQ(parse(from_type).arch, Architecture::Qwen3);
}

TEST(Config, Phi35MiniLongRope) {
  const ModelConfig c = parse(phi35_mini());
  EXPECT_EQ(c.arch, Architecture::Phi3);
  EXPECT_EQ(c.architecture_name, "Phi3ForCausalLM");
  EXPECT_EQ(c.head_dim, 96u);
  EXPECT_EQ(c.num_kv_heads, 32u);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias);
  EXPECT_EQ(c.sliding_window, 262144u);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{32000});
  const RopeScaling& r = c.rope_scaling;
  EXPECT_EQ(r.type, RopeScaling::Type::LongRope);
  EXPECT_EQ(r.original_max_position_embeddings, 4096u);
  EXPECT_EQ(r.factor, 32.0f);  // max_position_embeddings / original
  EXPECT_FLOAT_EQ(r.attention_factor, float(std::sqrt(1 + std::log(32.0) / std::log(4096.0))));  // 1.1902
  ASSERT_EQ(r.short_factor.size(), 48u);
  EXPECT_EQ(r.long_factor[47], float(1.0 + 0.5 * 47));
  EXPECT_FALSE(rope_uses_long_factors(c, 4096));  // the last position 4095 is inside the original context
  EXPECT_TRUE(rope_uses_long_factors(c, 4097));
  EXPECT_FALSE(rope_uses_long_factors(parse(kLlama32), 1 << 20));
  // inv_freq = 1 / (factor · θ^(2i/D)), per list, as _compute_longrope_parameters.
  for (bool long_factors : {false, true}) {
    const std::vector<float> f = rope_inv_freq(c, long_factors);
    ASSERT_EQ(f.size(), 48u);
    for (uint32_t i = 0; i < 48; ++i) {
      const double ext = long_factors ? 1.0 + 0.5 * i : 1.0 + 0.01 * i;
      EXPECT_NEAR(f[i], 1.0 / (ext * std::pow(10000.0, 2.0 * i / 96)), 1e-6 * f[i]) << i;
    }
  }
  // "su" (older configs); attention_factor given; transformers 5's rope_parameters with the original context
  // inside (and its "factor" then).
  json su = phi35_mini();
  su["rope_scaling"]["type"] = "su";
  su["rope_scaling"]["attention_factor"] = 1.5;
  EXPECT_EQ(parse(su).rope_scaling.type, RopeScaling::Type::LongRope);
  EXPECT_EQ(parse(su).rope_scaling.attention_factor, 1.5f);
  json v5 = phi35_mini();
  v5.erase("original_max_position_embeddings");
  json params = v5["rope_scaling"];
  v5.erase("rope_scaling");
  params.erase("type");
  params["rope_type"] = "longrope";
  params["rope_theta"] = 10000.0;
  params["original_max_position_embeddings"] = 4096;
  v5["rope_parameters"] = params;
  EXPECT_EQ(parse(v5).rope_scaling.attention_factor, r.attention_factor);
  v5["rope_parameters"]["factor"] = 8.0;
  EXPECT_FLOAT_EQ(parse(v5).rope_scaling.attention_factor, float(std::sqrt(1 + std::log(8.0) / std::log(4096.0))));
  // Phi3Config's defaults: no window, kv heads = heads, 4096 positions, eps 1e-5.
  const ModelConfig d = parse(minimal("Phi3ForCausalLM"));
  EXPECT_FALSE(d.sliding_window.has_value());
  EXPECT_EQ(d.num_kv_heads, 8u);
  EXPECT_EQ(d.max_position_embeddings, 4096u);
  EXPECT_EQ(d.rope_scaling.type, RopeScaling::Type::None);
}

TEST(Config, Phi3Refusals) {
  auto refused = [](const json& j, std::initializer_list<std::string_view> parts) {
    return throws_error([&] { parse(j); }, parts);
  };
  json j = phi35_mini();
  j["rope_scaling"]["short_factor"].erase(0);
  EXPECT_TRUE(refused(j, {"config.json", "\"rope_scaling\" (longrope)", "\"short_factor\" has 47 values",
                          "head_dim / 2 = 48 expected"}));
  j = phi35_mini();
  j["rope_scaling"]["long_factor"][3] = "x";
  EXPECT_TRUE(refused(j, {"\"long_factor\" must hold positive numbers, got \"x\""}));
  j = phi35_mini();
  j["rope_scaling"].erase("long_factor");
  EXPECT_TRUE(refused(j, {"\"long_factor\" is missing"}));
  j = phi35_mini();
  j.erase("original_max_position_embeddings");
  EXPECT_TRUE(refused(j, {"longrope needs \"original_max_position_embeddings\""}));
  j = phi35_mini();
  j["partial_rotary_factor"] = 0.75;  // Phi-4-mini
  EXPECT_TRUE(refused(j, {"\"partial_rotary_factor\" is 0.75", "only 1"}));
  j = phi35_mini();
  j["rope_scaling"]["partial_rotary_factor"] = 0.75;  // where transformers 5 writes it
  EXPECT_TRUE(refused(j, {"\"rope_scaling\" (longrope)", "\"partial_rotary_factor\" is 0.75"}));
  j = phi35_mini();
  j["partial_rotary_factor"] = 1.0;
  j["rope_scaling"]["partial_rotary_factor"] = 1.0;
  EXPECT_NO_THROW(parse(j));
}

TEST(Config, TransformersDefaults) {
  const ModelConfig llama = parse(minimal("LlamaForCausalLM"));
  EXPECT_EQ(llama.num_kv_heads, 8u);  // = num_attention_heads
  EXPECT_EQ(llama.head_dim, 32u);     // hidden / heads
  EXPECT_EQ(llama.max_position_embeddings, 2048u);
  EXPECT_EQ(llama.rms_norm_eps, 1e-6f);
  EXPECT_EQ(llama.rope_theta, 10000.0f);
  EXPECT_FALSE(llama.tie_word_embeddings);
  EXPECT_FALSE(llama.qkv_bias || llama.o_bias || llama.mlp_bias);
  EXPECT_EQ(llama.bos_token_id, 1);
  EXPECT_EQ(llama.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(llama.torch_dtype, "");
  EXPECT_FALSE(llama.sliding_window.has_value());

  json q = minimal("Qwen2ForCausalLM");
  q["num_attention_heads"] = 32;  // Qwen2Config's num_key_value_heads default is 32, not the query heads
  const ModelConfig qwen = parse(q);
  EXPECT_EQ(qwen.num_kv_heads, 32u);
  EXPECT_EQ(qwen.max_position_embeddings, 32768u);
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.o_bias);
  EXPECT_FALSE(qwen.bos_token_id.has_value());
  EXPECT_TRUE(qwen.eos_token_ids.empty());
  EXPECT_FALSE(qwen.sliding_window.has_value());

  const ModelConfig mistral = parse(minimal("MistralForCausalLM"));
  EXPECT_EQ(mistral.num_kv_heads, 8u);  // MistralConfig's default, 8
  EXPECT_EQ(mistral.max_position_embeddings, 4096u * 32);
  EXPECT_EQ(mistral.sliding_window, 4096u);
  EXPECT_EQ(mistral.bos_token_id, 1);

  json explicit_null = minimal("MistralForCausalLM");
  explicit_null["num_attention_heads"] = 4;
  explicit_null["num_key_value_heads"] = nullptr;  // null: the query heads
  explicit_null["sliding_window"] = nullptr;       // null: no window (Mistral v0.2+)
  explicit_null["head_dim"] = nullptr;
  explicit_null["bos_token_id"] = nullptr;
  explicit_null["eos_token_id"] = nullptr;
  const ModelConfig m = parse(explicit_null);
  EXPECT_EQ(m.num_kv_heads, 4u);
  EXPECT_EQ(m.head_dim, 64u);
  EXPECT_FALSE(m.sliding_window.has_value());
  EXPECT_FALSE(m.bos_token_id.has_value());
  EXPECT_TRUE(m.eos_token_ids.empty());
}

TEST(Config, ArchitectureFromModelType) {
  json j = minimal("LlamaForCausalLM");
  j.erase("architectures");
  j["model_type"] = "qwen2";
  j["num_key_value_heads"] = 2;
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.arch, Architecture::Qwen2);
  EXPECT_EQ(c.architecture_name, "Qwen2ForCausalLM");
}

TEST(Config, OptionsThatChangeTheWeights) {
  json q = kQwen25;
  q["use_sliding_window"] = true;
  EXPECT_EQ(parse(q).sliding_window, 32768u);
  EXPECT_EQ(parse(q).max_window_layers, 24u);  // the window is on layers 24 and up: none of Qwen2.5-0.5B's
  q["max_window_layers"] = 0;
  EXPECT_EQ(parse(q).max_window_layers, 0u);
  q["max_window_layers"] = -1;
  EXPECT_TRUE(throws_error([&] { parse(q); }, {"\"max_window_layers\" must be a non-negative integer, got -1"}));
  json l = kLlama32;
  l["attention_bias"] = true;
  l["mlp_bias"] = true;
  const ModelConfig c = parse(l);
  EXPECT_TRUE(c.qkv_bias && c.o_bias && c.mlp_bias);
  json m = kMistral7B;
  m["attention_bias"] = true;  // MistralAttention has no bias whatever the config says
  EXPECT_FALSE(parse(m).qkv_bias);
  json h = minimal("MistralForCausalLM");  // Mistral-NeMo style: head_dim given, hidden not heads * head_dim
  h["hidden_size"] = 5120;
  h["num_attention_heads"] = 32;
  h["head_dim"] = 128;
  EXPECT_EQ(parse(h).head_dim, 128u);
}

TEST(Config, RopeVariants) {
  json linear = minimal("LlamaForCausalLM");
  linear["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};  // the legacy "type" key
  EXPECT_EQ(parse(linear).rope_scaling.type, RopeScaling::Type::Linear);
  EXPECT_EQ(parse(linear).rope_scaling.factor, 4.0f);
  json def = minimal("LlamaForCausalLM");
  def["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(parse(def).rope_scaling.type, RopeScaling::Type::None);
  // transformers 5 writes rope_parameters instead of rope_theta / rope_scaling.
  json v5 = kLlama32;
  v5.erase("rope_scaling");
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                           {"factor", 32.0},          {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const ModelConfig c = parse(v5);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(rope_inv_freq(c), rope_inv_freq(parse(kLlama32)));
  json q5 = kQwen25;
  q5.erase("rope_theta");
  q5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  EXPECT_EQ(parse(q5).rope_theta, 1e6f);
  EXPECT_EQ(parse(q5).rope_scaling.type, RopeScaling::Type::None);
}

TEST(Config, MissingRequiredKeys) {
  for (const char* key :
       {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"}) {
    json j = kQwen25;
    j.erase(key);
    EXPECT_TRUE(throws_error([&] { parse(j); }, {"config.json", "missing required key", key}));
    j[key] = nullptr;
    EXPECT_TRUE(throws_error([&] { parse(j); }, {"config.json", "missing required key", key}));
  }
  json j = kQwen25;
  j.erase("architectures");
  j.erase("model_type");
  EXPECT_TRUE(throws_error([&] { parse(j); }, {"config.json", "missing required key \"architectures\""}));
}

TEST(Config, Refusals) {
  auto with = [](json j, const std::string& key, json value) {
    j[key] = std::move(value);
    return j;
  };
  const std::vector<std::pair<json, std::vector<std::string_view>>> cases = {
      {with(kQwen25, "architectures", {"GPT2LMHeadModel"}),
       {"architecture \"GPT2LMHeadModel\" is not supported",
        "Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, "
        "LlamaForCausalLM, MistralForCausalLM"}},
      {with(kQwen25, "architectures", "Qwen2ForCausalLM"), {"\"architectures\" must be a list"}},
      {with(with(minimal("LlamaForCausalLM"), "architectures", nullptr), "model_type", "gpt2"),
       {"architecture \"gpt2\" is not supported"}},
      {with(kQwen25, "hidden_size", "896"), {"\"hidden_size\" must be a positive integer, got \"896\""}},
      {with(kQwen25, "hidden_size", 0), {"\"hidden_size\" must be a positive integer, got 0"}},
      {with(kQwen25, "hidden_size", -896), {"\"hidden_size\" must be a positive integer"}},
      {with(kQwen25, "hidden_size", 896.5), {"\"hidden_size\" must be a positive integer"}},
      {with(kQwen25, "vocab_size", 1ull << 33), {"\"vocab_size\" must be a positive integer"}},
      {with(kQwen25, "hidden_size", 900), {"hidden_size 900 is not a multiple of num_attention_heads 14"}},
      {with(kQwen25, "num_key_value_heads", 3), {"num_attention_heads 14 is not a multiple of num_key_value_heads 3"}},
      {with(kQwen25, "head_dim", 63), {"head_dim 63 is odd"}},
      {with(kQwen25, "rms_norm_eps", -1), {"\"rms_norm_eps\" must be a positive number"}},
      {with(kQwen25, "rope_theta", "big"), {"\"rope_theta\" must be a positive number"}},
      {with(kQwen25, "tie_word_embeddings", 1), {"\"tie_word_embeddings\" must be true or false"}},
      {with(kQwen25, "hidden_act", "gelu"), {"\"hidden_act\" is \"gelu\"", "silu"}},
      {with(kQwen25, "quantization_config", {{"quant_method", "gptq"}}), {"quantized models are not supported"}},
      {with(kQwen25, "eos_token_id", {1, "x"}), {"\"eos_token_id\" must hold token ids"}},
      {with(kQwen25, "bos_token_id", -1), {"\"bos_token_id\" must hold token ids"}},
      // Numbers of the wrong kind or range are refused before any conversion (a float such as 1e48 has no integer).
      {with(kQwen25, "eos_token_id", 1e48), {"\"eos_token_id\" must hold token ids (non-negative integers), got 1e+48"}},
      {with(kQwen25, "eos_token_id", {1, 2.5}), {"\"eos_token_id\" must hold token ids (non-negative integers), got 2.5"}},
      {with(kQwen25, "bos_token_id", 1ll << 40), {"\"bos_token_id\" must hold token ids"}},
      {with(kQwen25, "vocab_size", 1e48), {"\"vocab_size\" must be a positive integer, got 1e+48"}},
      {with(kQwen25, "rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}), {"type \"yarn\" is not supported"}},
      {with(kQwen25, "rope_scaling", {{"rope_type", "dynamic"}, {"factor", 4.0}}),
       {"type \"dynamic\" is not supported", "default, linear, llama3, longrope"}},
      {with(kQwen25, "rope_scaling", {{"factor", 4.0}}), {"\"rope_scaling\" has no \"rope_type\""}},
      {with(kQwen25, "rope_scaling", 4), {"\"rope_scaling\" must be an object"}},
      {with(kQwen25, "rope_scaling", {{"type", "linear"}}), {"(linear) has no \"factor\""}},
      {with(kLlama32, "rope_scaling",
            {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}}),
       {"(llama3) has no \"original_max_position_embeddings\""}},
      {with(kLlama32, "rope_scaling",
            {{"rope_type", "llama3"},
             {"factor", 32.0},
             {"low_freq_factor", 4.0},
             {"high_freq_factor", 4.0},
             {"original_max_position_embeddings", 8192}}),
       {"low_freq_factor 4", "must be below high_freq_factor 4"}},
      {json::array({1, 2}), {"not a JSON object"}},
  };
  for (const auto& [j, parts] : cases) {
    std::vector<std::string_view> all = {"config.json"};
    all.insert(all.end(), parts.begin(), parts.end());
    try {
      parse(j);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const Error& e) {
      for (std::string_view p : all) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

// Gemma 3 configs in the layouts the hub's checkpoints use (written from memory of google/gemma-3-1b-it and
// gemma-3-4b-it, which were saved by transformers 4.50: what matters is the keys' layout, not the exact file).
const json kGemma3_1B = json::parse(R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
  "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
  "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
  "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})");
const json kGemma3_4B = json::parse(R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
  "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
  "model_type": "gemma3", "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
  "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
  "sliding_window": 1024}, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model",
  "num_hidden_layers": 27, "patch_size": 14}})");

TEST(Config, Gemma3_1B) {
  const ModelConfig c = parse(kGemma3_1B);
  EXPECT_EQ(c.arch, Architecture::Gemma3);
  EXPECT_EQ(c.architecture_name, "Gemma3ForCausalLM");
  EXPECT_FALSE(c.multimodal);
  EXPECT_EQ(c.weight_prefix, "model.");
  EXPECT_EQ(c.head_dim, 256u);
  EXPECT_EQ(c.num_kv_heads, 1u);
  EXPECT_TRUE(c.tie_word_embeddings);  // absent: Gemma3TextConfig's True
  EXPECT_EQ(c.sliding_window, 512u);
  ASSERT_EQ(c.sliding_layers.size(), 26u);
  for (uint32_t i = 0; i < 26; ++i) EXPECT_EQ(c.sliding_layers[i], (i + 1) % 6 != 0) << i;
  EXPECT_EQ(c.rope_theta, 1e6f);
  EXPECT_EQ(c.rope_local_theta, 1e4f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  EXPECT_EQ(c.query_pre_attn_scalar, 256.0f);
  EXPECT_EQ(c.final_logit_softcapping, 0.0f);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{1, 106}));
  json gelu = kGemma3_1B;
  gelu["hidden_activation"] = "gelu";
  EXPECT_TRUE(throws_error([&] { parse(gelu); }, {"config.json", "hidden_activation", "gelu_pytorch_tanh"}));
  json capped = kGemma3_1B;
  capped["attn_logit_softcapping"] = 50.0;
  EXPECT_TRUE(throws_error([&] { parse(capped); }, {"attn_logit_softcapping"}));
  json bidirectional = kGemma3_1B;
  bidirectional["use_bidirectional_attention"] = true;
  EXPECT_TRUE(throws_error([&] { parse(bidirectional); }, {"use_bidirectional_attention"}));
  json scaled_local = kGemma3_1B;
  scaled_local["rope_parameters"] = {{"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}}}};
  EXPECT_TRUE(throws_error([&] { parse(scaled_local); }, {"sliding_attention", "default RoPE"}));
}

// The text_config of a multimodal folder, sparse, with Gemma3TextConfig's defaults for the rest and the top
// level's eos and dtype.
TEST(Config, Gemma3_4B_ConditionalGeneration) {
  const ModelConfig c = parse(kGemma3_4B);
  EXPECT_EQ(c.arch, Architecture::Gemma3);
  EXPECT_EQ(c.architecture_name, "Gemma3ForConditionalGeneration");
  EXPECT_TRUE(c.multimodal);
  EXPECT_EQ(c.weight_prefix, "model.language_model.");
  EXPECT_EQ(c.hidden_size, 2560u);
  EXPECT_EQ(c.num_layers, 34u);
  EXPECT_EQ(c.num_heads, 8u);
  EXPECT_EQ(c.num_kv_heads, 4u);
  EXPECT_EQ(c.head_dim, 256u);
  EXPECT_EQ(c.vocab_size, 262208u);
  EXPECT_EQ(c.query_pre_attn_scalar, 256.0f);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::Linear);
  EXPECT_EQ(c.rope_scaling.factor, 8.0f);
  EXPECT_EQ(c.sliding_window, 1024u);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{1, 106}));
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  // Which names the files use.
  ModelConfig old = c;
  resolve_weight_names(old, [](const std::string& n) { return n == "language_model.model.embed_tokens.weight"; });
  EXPECT_EQ(old.weight_prefix, "language_model.model.");
  EXPECT_EQ(old.lm_head_name, "language_model.lm_head.weight");
  ModelConfig v5 = c;
  resolve_weight_names(v5, [](const std::string& n) { return n == "model.language_model.embed_tokens.weight"; });
  EXPECT_EQ(v5.weight_prefix, "model.language_model.");
  EXPECT_EQ(v5.lm_head_name, "lm_head.weight");
  json no_text = kGemma3_4B;
  no_text.erase("text_config");
  EXPECT_TRUE(throws_error([&] { parse(no_text); }, {"config.json", "text_config"}));
}

TEST(Config, LoadsFilesAndFolders) {
  test::TempDir dir;
  test::write_text(dir / "config.json", kMistral7B.dump(2));
  EXPECT_EQ(load_config(dir / "config.json").architecture_name, "MistralForCausalLM");
  EXPECT_EQ(load_config(dir.path()).architecture_name, "MistralForCausalLM");
  test::write_text(dir / "config.json", R"({"architectures": ["MistralForCausalLM"], )");
  EXPECT_TRUE(throws_error([&] { load_config(dir.path()); }, {(dir / "config.json").string(), "not valid JSON"}));
  json j = minimal("LlamaForCausalLM");
  j.erase("vocab_size");
  test::write_text(dir / "config.json", j.dump());
  EXPECT_TRUE(throws_error([&] { load_config(dir.path()); },
                           {(dir / "config.json").string(), "missing required key \"vocab_size\""}));
  EXPECT_TRUE(throws_error([&] { load_config(dir / "nope.json"); }, {"nope.json", "No such file"}));
}

// util/json_keys.h, which config.json, generation_config.json and adapter_config.json are read through: an integer
// is taken only when the JSON value is one, in range; never converted from a float or wrapped.
TEST(JsonKeys, IntegersAreCheckedBeforeConversion) {
  EXPECT_EQ(json_integer(json(7), 0, 10), 7);
  EXPECT_EQ(json_integer(json(-3), -5, 5), -3);
  EXPECT_EQ(json_integer(json::parse("18446744073709551615"), 0, INT64_MAX), std::nullopt);  // past int64
  EXPECT_EQ(json_integer(json::parse("9223372036854775807"), 0, INT64_MAX), INT64_MAX);
  for (const json& v : {json(1e48), json(2.0), json(-1e48), json("3"), json(true), json(nullptr), json::array({1})})
    EXPECT_EQ(json_integer(v, INT64_MIN, INT64_MAX), std::nullopt) << v.dump();
  EXPECT_EQ(json_integer(json(11), 0, 10), std::nullopt);
  EXPECT_EQ(json_integer(json(-1), 0, 10), std::nullopt);

  const json j = json::parse(R"({"r": 8, "big": 1e48, "alpha": 16.5, "huge": 1e300, "ids": [1, 2], "id": 5,
                                 "bad_ids": [1, -2], "none": null})");
  const JsonKeys k(j, "adapter_config.json");
  EXPECT_EQ(k.u32_in("r", 1, 64), 8u);
  EXPECT_TRUE(throws_error([&] { k.u32_in("big", 1, 64); },
                           {"adapter_config.json: \"big\" must be a whole number from 1 to 64, got 1e+48"}));
  EXPECT_TRUE(throws_error([&] { k.u32_in("none", 1, 64); }, {"missing required key \"none\""}));
  EXPECT_EQ(k.finite("alpha", 0, 1e6), 16.5);
  EXPECT_EQ(k.finite("absent", 4, 1e6), 4);
  EXPECT_TRUE(throws_error([&] { k.finite("huge", 0, 1e6); }, {"\"huge\" must be a finite number, at most 1e+06"}));
  EXPECT_EQ(k.token_ids("ids"), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(k.token_ids("id"), (std::vector<int32_t>{5}));
  EXPECT_TRUE(k.token_ids("none").empty());
  EXPECT_TRUE(throws_error([&] { k.token_ids("bad_ids"); }, {"\"bad_ids\" must hold token ids", "got -2"}));
}

// generation_config.json's eos ids (infer::ChatModelFiles, which chat and evaluation load): read through the same
// checks, a malformed one refused naming the file, never converted unchecked or skipped silently.
TEST(GenerationConfig, EosIdsAreCheckedNamingTheFile) {
  const std::filesystem::path fixture = std::filesystem::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
  test::TempDir dir;
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(fixture / f, dir / f);
  const ModelConfig config = load_config(dir.path());
  const std::string gen = (dir / "generation_config.json").string();
  test::write_text(dir / "generation_config.json", R"({"eos_token_id": [3, 7]})");
  const auto files = infer::ChatModelFiles::load(dir.path(), config);
  EXPECT_NE(std::find(files.eos.begin(), files.eos.end(), 3), files.eos.end());
  EXPECT_NE(std::find(files.eos.begin(), files.eos.end(), 7), files.eos.end());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"eos_token_id": 1e48})", "\"eos_token_id\" must hold token ids (non-negative integers), got 1e+48"},
      {R"({"eos_token_id": [3, 2.5]})", "got 2.5"},
      {R"({"eos_token_id": -1})", "got -1"},
      {R"({"eos_token_id": 4294967297})", "got 4294967297"},
      {R"({"eos_token_id": "</s>"})", "got \"</s>\""},
      {R"([1, 2])", "not a JSON object"},
      {R"({"eos_token_id": )", "not valid JSON"},
  };
  for (const auto& [text, what] : bad) {
    test::write_text(dir / "generation_config.json", text);
    EXPECT_TRUE(throws_error([&] { infer::ChatModelFiles::load(dir.path(), config); }, {gen, what})) << text;
  }
}

// ---------------------------------------------------------------------------------------------------------
// rope_inv_freq against double precision: 1 / theta^(2i/D), then the scaling in exact arithmetic.

std::vector<double> inv_freq_double(const ModelConfig& c) {
  std::vector<double> f(c.head_dim / 2);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0 / std::pow(double(c.rope_theta), double(2 * i) / c.head_dim);
  const RopeScaling& r = c.rope_scaling;
  if (r.type == RopeScaling::Type::Linear)
    for (double& x : f) x /= r.factor;
  if (r.type == RopeScaling::Type::Llama3) {
    const double orig = r.original_max_position_embeddings;
    for (double& x : f) {
      const double wavelen = 2 * std::numbers::pi / x;
      if (wavelen < orig / r.high_freq_factor) continue;
      if (wavelen > orig / r.low_freq_factor) {
        x /= r.factor;
        continue;
      }
      const double s = (orig / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      x = (1 - s) * x / r.factor + s * x;
    }
  }
  return f;
}

TEST(RopeInvFreq, PlainMatchesDouble) {
  for (const json* j : {&kQwen25, &kMistral7B}) {
    const ModelConfig c = parse(*j);
    const std::vector<float> got = rope_inv_freq(c);
    const std::vector<double> want = inv_freq_double(c);
    ASSERT_EQ(got.size(), c.head_dim / 2);
    EXPECT_EQ(got[0], 1.0f);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << c.architecture_name << " i=" << i;
  }
}

TEST(RopeInvFreq, Llama3MatchesDouble) {
  const ModelConfig c = parse(kLlama32);
  const std::vector<float> got = rope_inv_freq(c), plain = ops::rope_inv_freq(c.head_dim, c.rope_theta);
  const std::vector<double> want = inv_freq_double(c);
  int kept = 0, divided = 0, smoothed = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / want[i];
    if (got[i] == plain[i]) {
      ++kept;
    } else if (got[i] == plain[i] / 32) {
      ++divided;
    } else {
      ++smoothed;
    }
    // (measured: at most 2.2e-7 relative, in the smoothed band; elsewhere under 7e-8)
    EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << "i=" << i << " wavelen " << wavelen;
  }
  // theta 500000, D 64: i <= 14 keep their frequency, 15..17 are smoothed, 18..31 are divided by 32.
  EXPECT_EQ(kept, 15);
  EXPECT_EQ(smoothed, 3);
  EXPECT_EQ(divided, 14);
}

TEST(RopeInvFreq, LinearDividesByFactor) {
  json j = kMistral7B;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  const ModelConfig c = parse(j);
  const std::vector<float> got = rope_inv_freq(c), plain = rope_inv_freq(parse(kMistral7B));
  const std::vector<double> want = inv_freq_double(c);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], plain[i] / 4.0f);
    EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]);
  }
}

// The bits transformers itself computed (tests/fixtures/model_io_reference.py, run on a machine with torch).
TEST(RopeInvFreq, MatchesTransformersWhenFixturePresent) {
  const auto fixture = test::fixtures_dir() / "model_io_reference.json";
  if (!std::filesystem::exists(fixture))
    GTEST_SKIP() << fixture << " not generated (run tests/fixtures/model_io_reference.py)";
  const json ref = json::parse(test::read_text(fixture));
  for (const auto& [name, entry] : ref.at("inv_freq").items()) {
    const std::vector<float> got = rope_inv_freq(parse_config(entry.at("config"), name));
    const auto hex = entry.at("f32_hex").get<std::vector<std::string>>();
    ASSERT_EQ(got.size(), hex.size()) << name;
    int exact = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const uint32_t want = uint32_t(std::stoul(hex[i], nullptr, 16)), have = std::bit_cast<uint32_t>(got[i]);
      const int64_t ulps = std::llabs(int64_t(want) - int64_t(have));  // same sign, positive floats
      exact += ulps == 0;
      // torch's f32 pow (SLEEF, 1 ulp) may differ from a correctly rounded pow by an ulp; llama3's smoothing adds one.
      EXPECT_LE(ulps, 2) << name << " i=" << i << " transformers " << hex[i] << " ours " << std::hex << have;
    }
    std::cout << name << ": " << exact << " of " << got.size() << " inv_freq values bit-identical to transformers\n";
  }
}

}  // namespace
}  // namespace ls::model
