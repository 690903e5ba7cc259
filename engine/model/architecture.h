#pragma once
// The tensors a model's checkpoint holds, by their Hugging Face names: one table derived from the layer
// description (model/layer_spec.h), which the weight check and upload (model/weights.h), the demo model's
// writer and the UI's parameter count all iterate. And a check that a SafeTensors has exactly those.
// Sizes: V vocab, C hidden, I intermediate, H heads, KV kv heads, D head dim.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/layer_spec.h"
#include "model/safetensors.h"

namespace ls::model {

// Which weight a tensor is (the field of ModelWeights it fills).
enum class TensorRole : uint8_t {
  embed,       // embed
  final_norm,  // final_norm
  lm_head,     // lm_head
  layer_norm,  // layers[layer], the norm `norm`
  weight,      // layers[layer], the projection `target`: .w
  bias,        //   ... .b
};

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;
  TensorRole role = TensorRole::embed;
  uint32_t layer = 0;                       // layer_norm, weight, bias
  LayerNorm norm = LayerNorm::input;        // layer_norm
  LoraTarget target = LoraTarget::q_proj;   // weight, bias
  uint64_t numel() const;
};

// In module order. For Qwen2 / Llama / Mistral (Qwen3: also self_attn.q_norm.weight and k_norm.weight [D]
// after o_proj; Phi-3: self_attn.qkv_proj.weight [(H+2KV)*D, C] in place of q, k, v and mlp.gate_up_proj.weight
// [2I, C] in place of gate and up):
//   model.embed_tokens.weight                               [V, C]
//   per layer i, prefix model.layers.{i}.:
//     input_layernorm.weight                                [C]
//     self_attn.q_proj.weight [H*D, C]   (.bias [H*D] if qkv_bias)
//     self_attn.k_proj.weight [KV*D, C]  (.bias [KV*D] if qkv_bias)
//     self_attn.v_proj.weight [KV*D, C]  (.bias [KV*D] if qkv_bias)
//     self_attn.o_proj.weight [C, H*D]   (.bias [C] if o_bias)
//     post_attention_layernorm.weight                       [C]
//     mlp.gate_proj.weight [I, C], mlp.up_proj.weight [I, C] (.bias [I] if mlp_bias)
//     mlp.down_proj.weight [C, I]                            (.bias [C] if mlp_bias)
//   model.norm.weight                                        [C]
//   lm_head.weight                                           [V, C] unless tie_word_embeddings
// Gemma 3: also post_attention_layernorm (on the attention's output), pre_feedforward_layernorm and
// post_feedforward_layernorm [C] after the MLP, and q_norm, k_norm [D]. `prefix` replaces "model." and
// lm_head_name "lm_head.weight" (a Gemma3ForConditionalGeneration folder's: ModelConfig::weight_prefix).
std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec, const std::string& prefix = "model.",
                                             const std::string& lm_head_name = "lm_head.weight");
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c);

// Every expected tensor must be present with exactly its shape (dtype F32, F16 or BF16: SafeTensors reads
// no other), and every tensor present must be expected, except harmless extras: "*.rotary_emb.inv_freq"
// (old checkpoints saved the buffer) and, when tied, "lm_head.weight" of shape [V, C] (some tied
// checkpoints carry a copy; it is ignored), and in a multimodal folder every tensor outside the language
// model (ModelConfig::weight_prefix). Throws one ls::Error naming the model path and listing up to
// 10 problems (missing, wrong shape, unexpected), with a count of the rest.
void check_weights(const ModelConfig& c, const SafeTensors& st);

}  // namespace ls::model
