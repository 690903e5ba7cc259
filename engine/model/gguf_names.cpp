#include "model/gguf_names.h"

#include <array>
#include <charconv>

#include "error.h"

namespace ls::model {
namespace {

// (llama.cpp's phi3 keeps qkv_proj as attn_qkv and gate_up_proj as ffn_up; we write no Phi-3 GGUF: its
// longrope factors have no GGUF form here, gguf_export.cpp refuses it.)
constexpr std::array<std::string_view, kLoraTargetCount> kGgufTargetNames = {
    "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "attn_qkv", "ffn_up"};

}  // namespace

const char* gguf_architecture(Architecture arch) {
  switch (arch) {
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Phi3: return "phi3";  // (no Phi-3 GGUF is written: gguf_export.cpp refuses it)
    case Architecture::Gemma3: return "gemma3";  // (nor a Gemma 3 one)
    case Architecture::Llama:
    case Architecture::Mistral: return "llama";
  }
  throw Error("gguf_architecture: unknown architecture");
}

std::string_view gguf_target_name(LoraTarget target) { return kGgufTargetNames[size_t(target)]; }

std::optional<std::string> gguf_tensor_name(std::string_view hf) {
  auto unknown = [&]() -> Error {
    return Error("tensor \"" + std::string(hf) + "\" has no GGUF name (not a Qwen2/Qwen3/Llama weight we know)");
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  if (hf.ends_with(".rotary_emb.inv_freq")) return std::nullopt;
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) throw unknown();
  std::string_view rest = hf.substr(kLayers.size());
  uint32_t layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || *end != '.') throw unknown();
  rest = rest.substr(size_t(end - rest.data()) + 1);
  const std::string blk = "blk." + std::to_string(layer) + ".";
  if (rest == "input_layernorm.weight") return blk + "attn_norm.weight";
  if (rest == "post_attention_layernorm.weight") return blk + "ffn_norm.weight";
  if (rest == "self_attn.q_norm.weight") return blk + "attn_q_norm.weight";  // Qwen3
  if (rest == "self_attn.k_norm.weight") return blk + "attn_k_norm.weight";
  if (rest.ends_with(".rotary_emb.inv_freq")) return std::nullopt;
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) throw unknown();
  const std::string_view module = rest.substr(0, dot), leaf = rest.substr(dot + 1);
  const size_t dot2 = leaf.find('.');
  if (dot2 == std::string_view::npos) throw unknown();
  const auto target = parse_target(leaf.substr(0, dot2));
  const std::string_view kind = leaf.substr(dot2 + 1);
  if (!target || (kind != "weight" && kind != "bias")) throw unknown();
  const bool attention = size_t(*target) <= size_t(LoraTarget::o_proj);
  if (module != (attention ? "self_attn" : "mlp")) throw unknown();
  return blk + std::string(gguf_target_name(*target)) + "." + std::string(kind);
}

uint32_t gguf_permuted_heads(const ModelConfig& c, LoraTarget target) {
  if (c.arch == Architecture::Qwen2 || c.arch == Architecture::Qwen3) return 0;  // NEOX-style rope: HF's order
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
