#include "model/layer_spec.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"
#include "tensor/dtype.h"

namespace ls::model {

namespace {

// What a family fixes that its config does not say. Sizes, biases, the window and RoPE come from the
// config (model/config.cpp reads each family's keys and defaults).
struct Family {
  Architecture arch;
  NormStyle norm_style;
  MlpActivation activation;
  bool qk_norm = false;  // self_attn.q_norm / k_norm: RMSNorm [D] per head of q and k, before RoPE
  bool fused = false;    // self_attn.qkv_proj and mlp.gate_up_proj instead of their parts (Phi-3)
  bool sandwich = false;  // norms on the attention's and the MLP's outputs too (Gemma 3)
};
constexpr Family kFamilies[] = {
    {.arch = Architecture::Qwen2, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Llama, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Mistral, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu},
    {.arch = Architecture::Qwen3, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu,
     .qk_norm = true},
    {.arch = Architecture::Phi3, .norm_style = NormStyle::times_weight, .activation = MlpActivation::silu,
     .fused = true},
    {.arch = Architecture::Gemma3, .norm_style = NormStyle::one_plus_weight, .activation = MlpActivation::gelu_tanh,
     .qk_norm = true, .sandwich = true},
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
  std::string has;
  for (const ModuleSpec& m : modules)
    if (m.target) has += (has.empty() ? "" : ", ") + std::string(target_name(*m.target));
  throw Error("the layer has no " + std::string(target_name(t)) + " (its projections: " + has + ")");
}

bool LayerSpec::has_projection(LoraTarget t) const {
  return std::any_of(modules.begin(), modules.end(), [&](const ModuleSpec& m) { return m.target == t; });
}

ModuleSpec LayerSpec::product(LoraTarget t) const {
  const std::optional<FusedRows> f = fused_rows(t);
  if (!f) return projection(t);
  ModuleSpec m = projection(f->fused);
  m.target = t;
  m.out = f->end - f->begin;
  m.parts.clear();
  return m;
}

std::optional<FusedRows> LayerSpec::fused_rows(LoraTarget part) const {
  for (const ModuleSpec& m : modules) {
    uint32_t row = 0;
    for (const FusedPart& p : m.parts) {
      if (p.target == part) return FusedRows{.fused = *m.target, .begin = row, .end = row + p.rows};
      row += p.rows;
    }
  }
  return std::nullopt;
}

LayerSpec layer_spec(const ModelConfig& c, uint32_t layer) {
  const Family& f = family_of(c);
  const uint32_t C = c.hidden_size, I = c.intermediate_size, D = c.head_dim, Q = c.num_heads * D,
                 KV = c.num_kv_heads * D;
  // Gemma 3: the layers layer_types marks sliding; the others: every layer from max_window_layers on.
  const bool windowed = c.sliding_window && (c.sliding_layers.empty() ? layer >= c.max_window_layers
                                                                       : bool(c.sliding_layers.at(layer)));
  const float af = c.rope_scaling.attention_factor;  // longrope's cos/sin factor (1 for every other RoPE)
  LayerSpec s{
      .hidden = C,
      .intermediate = I,
      .heads = c.num_heads,
      .kv_heads = c.num_kv_heads,
      .head_dim = D,
      .norm = {.style = f.norm_style, .eps = c.rms_norm_eps},
      .activation = f.activation,
      // (query_pre_attn_scalar ** -0.5 is a Python float, rounded to f32 where it multiplies the scores)
      .attention_scale = c.query_pre_attn_scalar > 0 ? float(std::pow(double(c.query_pre_attn_scalar), -0.5))
                                                     : 1.0f / std::sqrt(float(D)) * (af * af),
      .qk_norm = f.qk_norm,
      .sandwich_norms = f.sandwich,
      .local_rope = windowed && c.rope_local_theta > 0,
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
  if (f.fused) {  // Phi3Attention's qkv_proj and Phi3MLP's gate_up_proj: [q; k; v] and [gate; up] by rows
    auto at = [&](LoraTarget t) {
      return std::find_if(s.modules.begin(), s.modules.end(), [&](const ModuleSpec& m) { return m.target == t; });
    };
    *at(LoraTarget::q_proj) = {.name = "self_attn.qkv_proj", .target = LoraTarget::qkv_proj, .out = Q + 2 * KV,
                               .in = C, .bias = c.qkv_bias,
                               .parts = {{LoraTarget::q_proj, Q}, {LoraTarget::k_proj, KV}, {LoraTarget::v_proj, KV}}};
    s.modules.erase(at(LoraTarget::k_proj));
    s.modules.erase(at(LoraTarget::v_proj));
    *at(LoraTarget::gate_proj) = {.name = "mlp.gate_up_proj", .target = LoraTarget::gate_up_proj, .out = 2 * I,
                                  .in = C, .bias = c.mlp_bias,
                                  .parts = {{LoraTarget::gate_proj, I}, {LoraTarget::up_proj, I}}};
    s.modules.erase(at(LoraTarget::up_proj));
  }
  if (f.qk_norm) {  // after o_proj, in Hugging Face's module order (Qwen3Attention)
    const auto after_o = std::find_if(s.modules.begin(), s.modules.end(),
                                      [](const ModuleSpec& m) { return m.target == LoraTarget::o_proj; }) + 1;
    s.modules.insert(after_o, {{.name = "self_attn.q_norm", .norm = LayerNorm::q, .out = D},
                               {.name = "self_attn.k_norm", .norm = LayerNorm::k, .out = D}});
  }
  if (f.sandwich) {  // Gemma3DecoderLayer: its "post_attention_layernorm" is on the attention's output, and
                     // "pre_feedforward_layernorm" the norm entering the MLP (LayerNorm::post_attention)
    for (ModuleSpec& m : s.modules)
      if (m.norm == LayerNorm::post_attention) m = {.name = "post_attention_layernorm", .norm = LayerNorm::attention_out, .out = C};
    s.modules.push_back({.name = "pre_feedforward_layernorm", .norm = LayerNorm::post_attention, .out = C});
    s.modules.push_back({.name = "post_feedforward_layernorm", .norm = LayerNorm::mlp_out, .out = C});
  }
  return s;
}

// √C as transformers multiplies the embedding by it: a Python float made a tensor of the weights' dtype.
float embedding_scale_of(const ModelConfig& c) {
  const float scale = float(std::sqrt(double(c.hidden_size)));
  if (c.torch_dtype == "bfloat16") return bf16_to_f32(f32_to_bf16(scale));
  if (c.torch_dtype == "float16") return f16_to_f32(f32_to_f16(scale));
  return scale;
}

ModelSpec model_spec(const ModelConfig& c) {
  const bool gemma = c.arch == Architecture::Gemma3;
  ModelSpec s{.vocab = c.vocab_size,
              .hidden = c.hidden_size,
              .tied = c.tie_word_embeddings,
              .embedding_scale = gemma ? embedding_scale_of(c) : 1.0f,
              .logit_softcap = c.final_logit_softcapping,
              .final_norm = {.style = family_of(c).norm_style, .eps = c.rms_norm_eps},
              .inv_freq = rope_inv_freq(c),
              .inv_freq_local = rope_inv_freq_local(c)};
  if (c.rope_scaling.type == RopeScaling::Type::LongRope) s.inv_freq_long = rope_inv_freq(c, true);
  for (uint32_t i = 0; i < c.num_layers; ++i) s.layers.push_back(layer_spec(c, i));
  return s;
}

}  // namespace ls::model
