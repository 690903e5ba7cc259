#pragma once
// How llama.cpp names and lays out the tensors of the architectures we support (its LLM_TENSOR_NAMES and
// convert_hf_to_gguf.py's map): "qwen2" for Qwen2, "qwen3" for Qwen3, "llama" for Llama and Mistral, "phi3"
// for Phi-3, "gemma3" for Gemma 3 (also the language model of Gemma3ForConditionalGeneration: the config's
// weight_prefix replaces "model." below, its lm_head_name "lm_head.weight", and the vision tower's and
// projector's tensors have no GGUF name in the model file).
//   model.embed_tokens.weight -> token_embd.weight      model.norm.weight -> output_norm.weight
//   lm_head.weight -> output.weight                     rope factors (Llama 3 rope) -> rope_freqs.weight
//   model.layers.N.input_layernorm -> blk.N.attn_norm   model.layers.N.post_attention_layernorm -> blk.N.ffn_norm
//   model.layers.N.{self_attn|mlp}.<target> -> blk.N.<gguf_target_name(target)> (.weight / .bias)
//   model.layers.N.self_attn.q_norm / k_norm (Qwen3, Gemma 3) -> blk.N.attn_q_norm / attn_k_norm
//   Gemma 3: post_attention_layernorm -> blk.N.post_attention_norm, pre_feedforward_layernorm -> blk.N.ffn_norm,
//     post_feedforward_layernorm -> blk.N.post_ffw_norm
//   Phi-3: self_attn.qkv_proj -> blk.N.attn_qkv, mlp.gate_up_proj -> blk.N.ffn_up (as they are: [q; k; v] and
//     [gate; up] by rows); longrope factors -> rope_factors_long.weight, rope_factors_short.weight
// llama.cpp's "llama" rotates pairs of neighbours where transformers rotates the two halves of a head, so
// convert_hf_to_gguf.py permutes the rows of q_proj and k_proj (weights, biases, and a LoRA's B): within
// each head of D rows, GGUF row 2j+s is HF row s·D/2 + j (s = 0, 1; j < D/2). Qwen2 and Qwen3 keep HF's order.
#include <optional>
#include <string>
#include <string_view>

#include "model/config.h"
#include "model/lora.h"

namespace ls::model {

// "qwen2", "qwen3", "llama", "phi3" or "gemma3".
const char* gguf_architecture(Architecture arch);

// "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", and for Phi-3's fused
// projections "attn_qkv" (qkv_proj) and "ffn_up" (gate_up_proj).
std::string_view gguf_target_name(LoraTarget target);

// The GGUF name of a Hugging Face tensor of a model with config `c`; nullopt for one that has no GGUF tensor
// (rotary inv_freq buffers; a multimodal folder's tensors outside its language model). Throws ls::Error
// naming the tensor when it is none of the above.
std::optional<std::string> gguf_tensor_name(const ModelConfig& c, std::string_view hf_name);

// How many heads' rows to permute in `hf_name` (q_proj: num_heads, k_proj: num_kv_heads) for the "llama"
// architecture; 0 when its rows keep their order.
uint32_t gguf_permuted_heads(const ModelConfig& c, std::string_view hf_name);
// The same for a LoRA target's B matrix.
uint32_t gguf_permuted_heads(const ModelConfig& c, LoraTarget target);

// HF row index of GGUF row `row` in a tensor whose rows are `heads` heads of equal size `rows / heads`.
inline uint64_t gguf_source_row(uint64_t row, uint64_t rows, uint32_t heads) {
  if (heads == 0) return row;
  const uint64_t d = rows / heads, h = row / d, j = (row % d) / 2, s = row % 2;
  return h * d + s * (d / 2) + j;
}

}  // namespace ls::model
