#include "model/layer_spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"

namespace ls::model {

namespace {

// What a family fixes that its config does not say. Sizes, biases, the window and RoPE come from the
// config (model/config.cpp reads each family's keys and defaults).
struct Family {
  Architecture arch;
  NormStyle norm_style;
  MlpActivation activation;
  bool qk_norm = false;  // self_attn.q_norm / k_norm: RMSNorm [D] per head of q and k, before RoPE
};
constexpr Family kFamilies[] = {
    {.arch = Architecture::Qwen2, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Llama, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Mistral, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Qwen3, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu,
     .qk_norm = true},
};

const Family& family_of(const ModelConfig& c) {
  for (const Family& f : kFamilies)
    if (f.arch == c.arch) return f;
  throw Error("model_spec: no layer description for " + c.architecture_name);
}

}  // namespace

const ModuleSpec& LayerSpec::projection(LoraTarget t) const {
  for (const ModuleSpec& m : modules)
    if (m.target == t) return m;
  throw Error("the layer has no " + std::string(target_name(t)));
}

LayerSpec layer_spec(const ModelConfig& c, uint32_t layer) {
  const Family& f = family_of(c);
  const uint32_t C = c.hidden_size, I = c.intermediate_size, D = c.head_dim, Q = c.num_heads * D,
                 KV = c.num_kv_heads * D;
  const bool windowed = c.sliding_window && layer >= c.max_window_layers;
  LayerSpec s{
      .hidden = C,
      .intermediate = I,
      .heads = c.num_heads,
      .kv_heads = c.num_kv_heads,
      .head_dim = D,
      .norm = {.style = f.norm_style, .eps = c.rms_norm_eps},
      .activation = f.activation,
      .attention_scale = 1.0f / std::sqrt(float(D)),
      .qk_norm = f.qk_norm,
      .window = windowed ? c.sliding_window : std::nullopt,
      .modules =
          {
              {.name = "input_layernorm", .norm = LayerNorm::input, .out = C},
              {.name = "self_attn.q_proj", .target = LoraTarget::q_proj, .out = Q, .in = C, .bias = c.qkv_bias},
              {.name = "self_attn.k_proj", .target = LoraTarget::k_proj, .out = KV, .in = C, .bias = c.qkv_bias},
              {.name = "self_attn.v_proj", .target = LoraTarget::v_proj, .out = KV, .in = C, .bias = c.qkv_bias},
              {.name = "self_attn.o_proj", .target = LoraTarget::o_proj, .out = C, .in = Q, .bias = c.o_bias},
              {.name = "post_attention_layernorm", .norm = LayerNorm::post_attention, .out = C},
              {.name = "mlp.gate_proj", .target = LoraTarget::gate_proj, .out = I, .in = C, .bias = c.mlp_bias},
              {.name = "mlp.up_proj", .target = LoraTarget::up_proj, .out = I, .in = C, .bias = c.mlp_bias},
              {.name = "mlp.down_proj", .target = LoraTarget::down_proj, .out = C, .in = I, .bias = c.mlp_bias},
          },
  };
  if (f.qk_norm) {  // after o_proj, in Hugging Face's module order (Qwen3Attention)
    const auto after_o = std::find_if(s.modules.begin(), s.modules.end(),
                                      [](const ModuleSpec& m) { return m.target == LoraTarget::o_proj; }) + 1;
    s.modules.insert(after_o, {{.name = "self_attn.q_norm", .norm = LayerNorm::q, .out = D},
                               {.name = "self_attn.k_norm", .norm = LayerNorm::k, .out = D}});
  }
  return s;
}

ModelSpec model_spec(const ModelConfig& c) {
  ModelSpec s{.vocab = c.vocab_size,
              .hidden = c.hidden_size,
              .tied = c.tie_word_embeddings,
              .final_norm = {.style = family_of(c).norm_style, .eps = c.rms_norm_eps},
              .inv_freq = rope_inv_freq(c)};
  for (uint32_t i = 0; i < c.num_layers; ++i) s.layers.push_back(layer_spec(c, i));
  return s;
}

}  // namespace ls::model
