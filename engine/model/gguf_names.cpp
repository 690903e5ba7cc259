#include "model/gguf_names.h"

#include <array>
#include <charconv>

#include "error.h"

namespace ls::model {
namespace {

// llama.cpp's phi3 keeps Phi-3's fused qkv_proj as attn_qkv and gate_up_proj as ffn_up (2·I rows, gate first).
constexpr std::array<std::string_view, kLoraTargetCount> kGgufTargetNames = {
    "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "attn_qkv", "ffn_up"};

}  // namespace

const char* gguf_architecture(Architecture arch) {
  switch (arch) {
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Phi3: return "phi3";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Llama:
    case Architecture::Mistral: return "llama";
  }
  throw Error("gguf_architecture: unknown architecture");
}

std::string_view gguf_target_name(LoraTarget target) { return kGgufTargetNames[size_t(target)]; }

std::optional<std::string> gguf_tensor_name(const ModelConfig& c, std::string_view hf) {
  auto unknown = [&]() -> Error {
    return Error("tensor \"" + std::string(hf) + "\" has no GGUF name (not a " + c.architecture_name +
                 " weight we know)");
  };
  const std::string_view prefix = c.weight_prefix;  // "model.", or the language model's of a multimodal folder
  if (hf == c.lm_head_name) return "output.weight";
  if (!hf.starts_with(prefix)) {
    if (c.multimodal) return std::nullopt;  // the vision tower and projector: not the language model's
    throw unknown();
  }
  std::string_view rest = hf.substr(prefix.size());
  if (rest == "embed_tokens.weight") return "token_embd.weight";
  if (rest == "norm.weight") return "output_norm.weight";
  if (hf.ends_with(".rotary_emb.inv_freq")) return std::nullopt;
  constexpr std::string_view kLayers = "layers.";
  if (!rest.starts_with(kLayers)) throw unknown();
  rest = rest.substr(kLayers.size());
  uint32_t layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || *end != '.') throw unknown();
  rest = rest.substr(size_t(end - rest.data()) + 1);
  const std::string blk = "blk." + std::to_string(layer) + ".";
  const bool gemma = c.arch == Architecture::Gemma3;
  if (rest == "input_layernorm.weight") return blk + "attn_norm.weight";
  // Gemma 3 normalizes the attention's output (post_attention_layernorm) and the MLP's input and output.
  if (rest == "post_attention_layernorm.weight") return blk + (gemma ? "post_attention_norm.weight" : "ffn_norm.weight");
  if (gemma && rest == "pre_feedforward_layernorm.weight") return blk + "ffn_norm.weight";
  if (gemma && rest == "post_feedforward_layernorm.weight") return blk + "post_ffw_norm.weight";
  if (rest == "self_attn.q_norm.weight") return blk + "attn_q_norm.weight";  // Qwen3, Gemma 3
  if (rest == "self_attn.k_norm.weight") return blk + "attn_k_norm.weight";
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) throw unknown();
  const std::string_view module = rest.substr(0, dot), leaf = rest.substr(dot + 1);
  const size_t dot2 = leaf.find('.');
  if (dot2 == std::string_view::npos) throw unknown();
  const auto target = parse_target(leaf.substr(0, dot2));
  const std::string_view kind = leaf.substr(dot2 + 1);
  if (!target || (kind != "weight" && kind != "bias")) throw unknown();
  const bool attention = size_t(*target) <= size_t(LoraTarget::o_proj) || *target == LoraTarget::qkv_proj;
  if (module != (attention ? "self_attn" : "mlp")) throw unknown();
  return blk + std::string(gguf_target_name(*target)) + "." + std::string(kind);
}

uint32_t gguf_permuted_heads(const ModelConfig& c, LoraTarget target) {
  // Only llama.cpp's "llama" rotates neighbours; qwen2, qwen3, phi3 and gemma3 rotate halves as HF does.
  if (c.arch != Architecture::Llama && c.arch != Architecture::Mistral) return 0;
  if (target == LoraTarget::q_proj) return c.num_heads;
  if (target == LoraTarget::k_proj) return c.num_kv_heads;
  return 0;
}

uint32_t gguf_permuted_heads(const ModelConfig& c, std::string_view hf_name) {
  for (LoraTarget t : {LoraTarget::q_proj, LoraTarget::k_proj})
    for (std::string_view kind : {".weight", ".bias"})
      if (hf_name.ends_with("self_attn." + std::string(target_name(t)) + std::string(kind)))
        return gguf_permuted_heads(c, t);
  return 0;
}

}  // namespace ls::model
