#pragma once
// The tensors a Qwen2 / Llama / Mistral checkpoint holds, by their Hugging Face names, and a check that a
// SafeTensors has exactly those. Sizes: V vocab, C hidden, I intermediate, H heads, KV kv heads, D head dim.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace ls::model {

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

// In module order:
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
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c);

// Every expected tensor must be present with exactly its shape (dtype F32, F16 or BF16: SafeTensors reads
// no other), and every tensor present must be expected, except harmless extras: "*.rotary_emb.inv_freq"
// (old checkpoints saved the buffer) and, when tied, "lm_head.weight" of shape [V, C] (some tied
// checkpoints carry a copy; it is ignored). Throws one ls::Error naming the model path and listing up to
// 10 problems (missing, wrong shape, unexpected), with a count of the rest.
void check_weights(const ModelConfig& c, const SafeTensors& st);

}  // namespace ls::model
