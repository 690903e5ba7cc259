#pragma once
// A Hugging Face config.json for the decoder-only models we run: Qwen2ForCausalLM, Qwen3ForCausalLM,
// Phi3ForCausalLM, Gemma3ForCausalLM, LlamaForCausalLM, MistralForCausalLM, and the language model of a
// Gemma3ForConditionalGeneration folder (its "text_config"; the vision tower is ignored). Keys missing from
// the file take the defaults of transformers' Qwen2Config, Qwen3Config, Phi3Config, Gemma3TextConfig,
// LlamaConfig and MistralConfig, except the sizes (below), which must be given (Gemma 3: they too default
// to Gemma3TextConfig's, as the multimodal checkpoints' sparse text_config relies on).
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ls::model {

enum class Architecture { Qwen2, Llama, Mistral, Qwen3, Phi3, Gemma3 };

// HF rope_scaling (or, as transformers 5 writes it, rope_parameters): "llama3" (Llama 3.1/3.2), "linear",
// "longrope" (Phi-3; older configs say "su"), or none ("default" or absent). Any other type is refused.
struct RopeScaling {
  enum class Type { None, Linear, Llama3, LongRope } type = Type::None;
  float factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  uint32_t original_max_position_embeddings = 8192;
  // longrope: [D/2] each; the long factors serve a forward whose last position is at or past
  // original_max_position_embeddings (rope_uses_long_factors), the short ones any other.
  std::vector<float> short_factor, long_factor;
  float attention_factor = 1;  // longrope: cos and sin are multiplied by it (rope_attention_factor)
};

// Sizes: V vocab_size, C hidden_size, I intermediate_size, H num_heads, KV num_kv_heads, D head_dim.
struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string architecture_name;  // e.g. "Qwen2ForCausalLM" (from "architectures", or from "model_type")
  uint32_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_layers = 0, num_heads = 0, num_kv_heads = 0,
           head_dim = 0;
  uint32_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // Qwen2: always (HF Qwen2Attention has bias on q, k, v, not o); Llama, Qwen3:
                          // "attention_bias"
  bool o_bias = false;    // Llama and Qwen3 "attention_bias" also put a bias on o_proj; Qwen2, Mistral: never
  bool mlp_bias = false;  // Llama "mlp_bias" (bias on gate, up and down)
  // Mistral ("sliding_window", default 4096, null for none), Phi-3 ("sliding_window", default none) and
  // Qwen2 / Qwen3 (only when "use_sliding_window" is true, and then only on layers >= "max_window_layers").
  std::optional<uint32_t> sliding_window;
  uint32_t max_window_layers = 0;  // Qwen2 / Qwen3 with a window: "max_window_layers" (default 28); else 0
  // Gemma 3: which layers attend within sliding_window ("layer_types": "sliding_attention" / "full_attention";
  // older configs: every layer but each sliding_window_pattern-th, default 6). Empty for the other families.
  std::vector<bool> sliding_layers;
  // Gemma 3: the sliding layers' RoPE, default (unscaled) with this base (transformers 5's
  // rope_parameters.sliding_attention.rope_theta, older configs' rope_local_base_freq; default 10000). The
  // full layers' RoPE is rope_theta with rope_scaling. 0 for the other families.
  float rope_local_theta = 0;
  // Gemma 3: attention scores scaled by query_pre_attn_scalar^-0.5 instead of head_dim^-0.5 (0: the latter).
  float query_pre_attn_scalar = 0;
  // Gemma 3: logits = c·tanh(logits / c) ("final_logit_softcapping"; 0: none).
  float final_logit_softcapping = 0;
  // Where the language model's tensors are: "model." (…embed_tokens.weight, …layers.N., …norm.weight) and
  // lm_head_name "lm_head.weight"; Gemma3ForConditionalGeneration: "model.language_model." (transformers 5)
  // or "language_model.model." with "language_model.lm_head.weight" (older checkpoints), told apart by the
  // files (resolve_weight_names), the other tensors of the folder (vision tower, projector) being ignored.
  std::string weight_prefix = "model.";
  std::string lm_head_name = "lm_head.weight";
  bool multimodal = false;  // a Gemma3ForConditionalGeneration folder: only its language model is read
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // "eos_token_id" may be an int or a list
  std::string torch_dtype;             // "torch_dtype" (or transformers 5's "dtype") as written, "" if absent
  std::string model_type;              // as written ("qwen2", "llama", "mistral"), "" if absent
};

// Reads `config_json`, or `config_json`/config.json when it is a folder. Throws ls::Error naming the file
// and the key on a missing required size (hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, vocab_size; architectures or model_type), a value of the wrong type or range, an
// unsupported architecture (the message lists the supported ones), an activation other than SiLU (Gemma 3:
// gelu_pytorch_tanh), Gemma 3's attn_logit_softcapping, bidirectional attention or scaled sliding-layer RoPE, a
// quantized model, inconsistent sizes (hidden_size % heads without "head_dim", heads % kv_heads, odd
// head_dim) or an unsupported rope_scaling type, longrope factor lists of the wrong length or without an
// original_max_position_embeddings, and a partial_rotary_factor other than 1 (Phi-4-mini). Qwen3 without
// "head_dim" takes Qwen3Config's 128, not hidden_size / heads, as transformers does.
ModelConfig load_config(const std::filesystem::path& config_json);
ModelConfig parse_config(const nlohmann::json& j, const std::filesystem::path& source_for_errors);

// longrope: whether a forward over positions [0, end) uses the long factors (transformers' dynamic rope
// update: the largest position + 1 > original_max_position_embeddings). False for every other RoPE.
bool rope_uses_long_factors(const ModelConfig& c, uint64_t end);

// A multimodal folder (ModelConfig::multimodal): weight_prefix and lm_head_name from the names its files hold
// (`has(name)`), "model.language_model." unless "language_model.model.embed_tokens.weight" is there. Nothing
// for the other configs.
template <class Has>
void resolve_weight_names(ModelConfig& c, const Has& has) {
  if (!c.multimodal) return;
  const bool old_layout = !has("model.language_model.embed_tokens.weight") && has("language_model.model.embed_tokens.weight");
  c.weight_prefix = old_layout ? "language_model.model." : "model.language_model.";
  c.lm_head_name = old_layout ? "language_model.lm_head.weight" : "lm_head.weight";
}

// The names of the supported architectures, for messages: "Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM,
// Gemma3ForCausalLM, Gemma3ForConditionalGeneration, LlamaForCausalLM, MistralForCausalLM".
const char* supported_architectures();

// HF's rotary inverse frequencies, [D/2] f32, as transformers computes them on the CPU:
//   inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
// every step rounded to f32 (base ** x computed in double and rounded to f32: torch's own f32 pow may differ
// from that by an ulp); this is ops::rope_inv_freq(D, rope_theta). Then, per rope_scaling:
//   linear: inv_freq / factor (in f32). transformers now does exactly this (_compute_linear_scaling_rope_
//     parameters); older versions divided the positions instead, the same angle up to f32 rounding.
//   llama3: transformers' _compute_llama3_parameters step by step in f32 (torch's CPU order of operations:
//     Python scalars become f32, `scalar / tensor` is reciprocal(tensor) * scalar):
//     wavelen = (1 / inv_freq) * f32(2 pi); wavelen < orig / high: kept; wavelen > orig / low: inv_freq / factor;
//     otherwise s = ((1 / wavelen) * orig - low) / (high - low) and ((1 - s) * inv_freq) / factor + s * inv_freq.
//   longrope: 1 / (ext_factors * base ** (arange(0, D, 2) / D)), ext_factors the short or the long factors
//     (`long_factors`), as _compute_longrope_parameters does in f32.
std::vector<float> rope_inv_freq(const ModelConfig& c, bool long_factors = false);
// Gemma 3's sliding layers: ops::rope_inv_freq(D, rope_local_theta), unscaled. Empty for the other families.
std::vector<float> rope_inv_freq_local(const ModelConfig& c);

}  // namespace ls::model
