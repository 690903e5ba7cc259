// The layer description (model/layer_spec.h) each config implies, and the tensor table read through it:
// modules in Hugging Face order with the config's biases, the attention window on the layers the config
// puts it on, and every row of the table filling its own field of ModelWeights.
#include "model/layer_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/weights.h"

namespace ls::model {
namespace {

using nlohmann::json;
using test::throws_error;

json config(const char* arch) {
  return {{"architectures", {arch}}, {"hidden_size", 48},       {"intermediate_size", 80}, {"num_hidden_layers", 3},
          {"num_attention_heads", 6}, {"num_key_value_heads", 2}, {"vocab_size", 100}};
}

ModelSpec spec_of(const json& j) { return model_spec(parse_config(j, "config.json")); }

TEST(LayerSpec, Qwen2ModulesInOrderWithQkvBiases) {
  const ModelSpec s = spec_of(config("Qwen2ForCausalLM"));
  ASSERT_EQ(s.layers.size(), 3u);
  const LayerSpec& l = s.layers[1];
  EXPECT_EQ(l.hidden, 48u);
  EXPECT_EQ(l.head_dim, 8u);
  EXPECT_FLOAT_EQ(l.attention_scale, 1.0f / std::sqrt(8.0f));
  EXPECT_EQ(l.norm.style, NormStyle::times_weight);
  EXPECT_EQ(l.activation, MlpActivation::silu);
  std::vector<std::string> names;
  for (const ModuleSpec& m : l.modules) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                                             "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                                             "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}));
  EXPECT_TRUE(l.projection(LoraTarget::k_proj).bias);
  EXPECT_FALSE(l.projection(LoraTarget::o_proj).bias);
  EXPECT_FALSE(l.projection(LoraTarget::down_proj).bias);
  EXPECT_EQ(l.projection(LoraTarget::k_proj).out, 16u);
  EXPECT_EQ(l.projection(LoraTarget::down_proj).in, 80u);
  EXPECT_EQ(s.inv_freq.size(), 4u);
  EXPECT_EQ(s.embedding_scale, 1.0f);
}

// Qwen3: q_norm and k_norm [D] after o_proj (Qwen3Attention's module order), no biases unless
// attention_bias, head_dim from the config.
TEST(LayerSpec, Qwen3QkNormsAndHeadDim) {
  json j = config("Qwen3ForCausalLM");
  j["head_dim"] = 10;  // H·D = 60 != C = 48
  const ModelSpec s = spec_of(j);
  const LayerSpec& l = s.layers[2];
  EXPECT_TRUE(l.qk_norm);
  EXPECT_EQ(l.head_dim, 10u);
  EXPECT_FLOAT_EQ(l.attention_scale, 1.0f / std::sqrt(10.0f));
  std::vector<std::string> names;
  for (const ModuleSpec& m : l.modules) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                                             "self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm",
                                             "self_attn.k_norm", "post_attention_layernorm", "mlp.gate_proj",
                                             "mlp.up_proj", "mlp.down_proj"}));
  EXPECT_EQ(l.modules[5].norm, LayerNorm::q);
  EXPECT_EQ(l.modules[6].norm, LayerNorm::k);
  EXPECT_EQ(l.modules[5].out, 10u);
  EXPECT_EQ(l.projection(LoraTarget::q_proj).out, 60u);
  EXPECT_EQ(l.projection(LoraTarget::o_proj).in, 60u);
  EXPECT_EQ(l.projection(LoraTarget::k_proj).out, 20u);
  for (const ModuleSpec& m : l.modules) EXPECT_FALSE(m.bias) << m.name;
  EXPECT_EQ(s.inv_freq.size(), 5u);
  EXPECT_FALSE(spec_of(config("Qwen2ForCausalLM")).layers[0].qk_norm);
}

// Phi-3: qkv_proj [(H + 2KV)·D, C] and gate_up_proj [2I, C] in place of their parts, each part's rows known;
// longrope's attention factor squared in the attention scale (it multiplies cos and sin, so q and k).
TEST(LayerSpec, Phi3FusedProjectionsAndLongRope) {
  json j = config("Phi3ForCausalLM");  // C 48, H 6, KV 2, D 8, I 80
  j["max_position_embeddings"] = 64;
  j["original_max_position_embeddings"] = 16;
  j["rope_scaling"] = {{"type", "longrope"},
                       {"short_factor", {1.0, 1.5, 2.0, 2.5}},
                       {"long_factor", {3.0, 4.0, 5.0, 6.0}}};
  const ModelSpec s = spec_of(j);
  const LayerSpec& l = s.layers[0];
  std::vector<std::string> names;
  for (const ModuleSpec& m : l.modules) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input_layernorm", "self_attn.qkv_proj", "self_attn.o_proj",
                                             "post_attention_layernorm", "mlp.gate_up_proj", "mlp.down_proj"}));
  EXPECT_EQ(l.projection(LoraTarget::qkv_proj).out, (6u + 2 * 2) * 8);
  EXPECT_EQ(l.projection(LoraTarget::gate_up_proj).out, 160u);
  EXPECT_FALSE(l.has_projection(LoraTarget::q_proj));
  EXPECT_TRUE(l.has_projection(LoraTarget::qkv_proj));
  const auto k = l.fused_rows(LoraTarget::k_proj);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->fused, LoraTarget::qkv_proj);
  EXPECT_EQ(k->begin, 48u);
  EXPECT_EQ(k->end, 64u);
  const auto up = l.fused_rows(LoraTarget::up_proj);
  ASSERT_TRUE(up);
  EXPECT_EQ(up->begin, 80u);
  EXPECT_EQ(up->end, 160u);
  EXPECT_FALSE(l.fused_rows(LoraTarget::o_proj));
  EXPECT_EQ(l.product(LoraTarget::v_proj).out, 16u);
  EXPECT_EQ(l.product(LoraTarget::v_proj).in, 48u);
  EXPECT_EQ(l.product(LoraTarget::down_proj).out, 48u);
  EXPECT_EQ(target_shape(parse_config(j, "config.json"), LoraTarget::qkv_proj), std::make_pair(80u, 48u));
  EXPECT_TRUE(throws_error([&] { (void)l.projection(LoraTarget::q_proj); },
                           {"no q_proj", "qkv_proj, o_proj, gate_up_proj, down_proj"}));
  const float af = float(std::sqrt(1 + std::log(4.0) / std::log(16.0)));
  EXPECT_FLOAT_EQ(l.attention_scale, af * af / std::sqrt(8.0f));
  EXPECT_EQ(s.inv_freq.size(), 4u);
  EXPECT_EQ(s.inv_freq_long.size(), 4u);
  EXPECT_NE(s.inv_freq, s.inv_freq_long);
  EXPECT_TRUE(spec_of(config("LlamaForCausalLM")).inv_freq_long.empty());
}

TEST(LayerSpec, LlamaBiasesFromTheConfig) {
  json j = config("LlamaForCausalLM");
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  const LayerSpec l = spec_of(j).layers[0];
  for (const ModuleSpec& m : l.modules)
    if (m.target) {
      EXPECT_TRUE(m.bias) << m.name;
    }
  EXPECT_FALSE(spec_of(config("LlamaForCausalLM")).layers[0].projection(LoraTarget::q_proj).bias);
}

TEST(LayerSpec, AttentionWindowOnTheLayersTheConfigSays) {
  const ModelSpec mistral = spec_of(config("MistralForCausalLM"));  // sliding_window defaults to 4096
  for (const LayerSpec& l : mistral.layers) EXPECT_EQ(l.window, 4096u);
  json m = config("MistralForCausalLM");
  m["sliding_window"] = nullptr;
  for (const LayerSpec& l : spec_of(m).layers) EXPECT_FALSE(l.window);

  json q = config("Qwen2ForCausalLM");
  q["sliding_window"] = 32;
  for (const LayerSpec& l : spec_of(q).layers) EXPECT_FALSE(l.window);  // use_sliding_window false
  q["use_sliding_window"] = true;
  q["max_window_layers"] = 1;
  const ModelSpec windowed = spec_of(q);
  EXPECT_FALSE(windowed.layers[0].window);
  EXPECT_EQ(windowed.layers[1].window, 32u);
  EXPECT_EQ(windowed.layers[2].window, 32u);
  q.erase("max_window_layers");  // Qwen2Config's default, 28: no layer of three
  for (const LayerSpec& l : spec_of(q).layers) EXPECT_FALSE(l.window);
}

// Gemma 3 (transformers 5's config layout, as gemma3_tiny's): four norms a layer in Gemma3DecoderLayer's
// names, x·(1 + w) norms, GELU-tanh, q/k norms, the window and the local RoPE on the sliding layers,
// query_pre_attn_scalar, √C embedding scale and the logit softcap.
TEST(LayerSpec, Gemma3SandwichNormsSlidingLayersAndScales) {
  json g = config("Gemma3ForCausalLM");
  g["head_dim"] = 16;
  g["query_pre_attn_scalar"] = 20;
  g["final_logit_softcapping"] = 8.0;
  g["sliding_window"] = 8;
  g["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  g["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  const ModelSpec s = spec_of(g);
  const LayerSpec& l = s.layers[0];
  EXPECT_EQ(l.norm.style, NormStyle::one_plus_weight);
  EXPECT_EQ(s.final_norm.style, NormStyle::one_plus_weight);
  EXPECT_EQ(l.activation, MlpActivation::gelu_tanh);
  EXPECT_TRUE(l.qk_norm && l.sandwich_norms);
  std::vector<std::string> names;
  for (const ModuleSpec& m : l.modules) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                                             "self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm",
                                             "self_attn.k_norm", "post_attention_layernorm", "mlp.gate_proj",
                                             "mlp.up_proj", "mlp.down_proj", "pre_feedforward_layernorm",
                                             "post_feedforward_layernorm"}));
  EXPECT_EQ(l.modules[7].norm, LayerNorm::attention_out);  // Gemma's post_attention_layernorm: on o
  EXPECT_EQ(l.modules[11].norm, LayerNorm::post_attention);  // the norm entering the MLP
  EXPECT_EQ(l.modules[12].norm, LayerNorm::mlp_out);
  EXPECT_EQ(l.projection(LoraTarget::q_proj).out, 6u * 16);
  EXPECT_FLOAT_EQ(l.attention_scale, float(1 / std::sqrt(20.0)));
  EXPECT_EQ(s.layers[0].window, 8u);
  EXPECT_FALSE(s.layers[1].window);
  EXPECT_EQ(s.layers[2].window, 8u);
  EXPECT_TRUE(s.layers[0].local_rope && !s.layers[1].local_rope && s.layers[2].local_rope);
  ASSERT_EQ(s.inv_freq.size(), 8u);
  ASSERT_EQ(s.inv_freq_local.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(s.inv_freq[i], 0.5 / std::pow(1e6, i / 8.0), 1e-6 * s.inv_freq[i]) << i;  // linear factor 2
    EXPECT_NEAR(s.inv_freq_local[i], 1 / std::pow(1e4, i / 8.0), 1e-6 * s.inv_freq_local[i]) << i;
  }
  EXPECT_EQ(s.logit_softcap, 8.0f);
  EXPECT_FLOAT_EQ(s.embedding_scale, float(std::sqrt(48.0)));
  EXPECT_TRUE(s.tied);  // Gemma3TextConfig's default
  // transformers multiplies by √C rounded to the weights' dtype: bf16 √640 = 25.25.
  g["hidden_size"] = 640;
  g["torch_dtype"] = "bfloat16";
  EXPECT_EQ(spec_of(g).embedding_scale, 25.25f);
  // Older configs: sliding_window_pattern (layer i full when (i + 1) % pattern == 0), rope_local_base_freq,
  // rope_scaling for the full layers.
  json old = config("Gemma3ForCausalLM");
  old["sliding_window_pattern"] = 3;
  old["rope_local_base_freq"] = 5000.0;
  old["rope_theta"] = 1e5;
  old["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 4.0}};
  const ModelSpec o = spec_of(old);
  EXPECT_TRUE(o.layers[0].window && o.layers[1].window && !o.layers[2].window);
  EXPECT_EQ(o.layers[0].window, 4096u);  // Gemma3TextConfig's default
  EXPECT_FLOAT_EQ(o.layers[0].attention_scale, 1 / 16.0f);  // query_pre_attn_scalar's default 256
  // head_dim: Gemma3TextConfig's 256, not hidden / heads
  EXPECT_NEAR(o.inv_freq[1], 0.25 / std::pow(1e5, 2.0 / 256), 1e-6 * o.inv_freq[1]);
  EXPECT_NEAR(o.inv_freq_local[1], 1 / std::pow(5000.0, 2.0 / 256), 1e-6 * o.inv_freq_local[1]);
  EXPECT_EQ(o.logit_softcap, 0.0f);
}

TEST(TensorTable, EveryRowFillsItsOwnWeight) {
  for (const char* arch : {"Qwen2ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM", "Gemma3ForCausalLM"})
    for (bool tied : {false, true}) {
      json j = config(arch);
      j["tie_word_embeddings"] = tied;
      j["attention_bias"] = true;
      j["mlp_bias"] = true;
      const ModelConfig c = parse_config(j, "config.json");
      ModelWeights w;
      w.layers.resize(c.num_layers);
      std::set<const Tensor*> fields;
      const auto table = expected_tensors(c);
      for (const ExpectedTensor& e : table) EXPECT_TRUE(fields.insert(&weight_of(w, e)).second) << e.name;
      // embed, 2 norms and 7 weights and their biases (Llama; Qwen2's o and mlp have none) a layer,
      // the final norm, lm_head unless tied
      // (Qwen3 with attention_bias: q, k, v, o biases, and its q and k norms)
      const std::string a = arch;
      // (Gemma 3 with attention_bias: the same, and its two more norms; it has no mlp_bias)
      const size_t per_layer = a == "LlamaForCausalLM"   ? 2 + 7 + 7
                               : a == "Qwen3ForCausalLM" ? 4 + 7 + 4
                               : a == "Gemma3ForCausalLM" ? 6 + 7 + 4
                                                          : 2 + 7 + 3;
      EXPECT_EQ(table.size(), 2 + 3 * per_layer + (tied ? 0 : 1)) << arch;
    }
}

TEST(TensorTable, TargetShapesAreTheProjections) {
  const ModelConfig c = parse_config(config("Qwen2ForCausalLM"), "config.json");
  const LayerSpec layer = layer_spec(c, 0);
  for (size_t t = 0; t < kLoraTargetCount; ++t) {
    if (!layer.has_projection(LoraTarget(t))) continue;  // Phi-3's fused ones
    const ModuleSpec& p = layer.projection(LoraTarget(t));
    EXPECT_EQ(target_shape(c, LoraTarget(t)), std::make_pair(p.out, p.in)) << p.name;
  }
  EXPECT_EQ(target_shape(c, LoraTarget::o_proj), std::make_pair(48u, 48u));
  EXPECT_EQ(target_shape(c, LoraTarget::up_proj), std::make_pair(80u, 48u));
}

}  // namespace
}  // namespace ls::model
