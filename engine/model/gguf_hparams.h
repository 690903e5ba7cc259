#pragma once
// The hyper-parameters of an exported GGUF model, and the few value changes its tensors need, as llama.cpp
// reads them (llama-model.cpp, src/models/<arch>.cpp) and convert_hf_to_gguf.py writes them:
//   every family: general.{architecture, type "model", name (the folder's), file_type, quantization_version},
//     <arch>.{block_count, context_length, embedding_length, feed_forward_length, attention.head_count,
//     attention.head_count_kv, rope.freq_base, attention.layer_norm_rms_epsilon}; key_length/value_length when
//     config.json sets head_dim (Gemma 3: always); vocab_size and rope.dimension_count except for qwen2/qwen3;
//     linear rope scaling: rope.scaling.type "linear" and rope.scaling.factor.
//   phi3: attention.sliding_window (0 for none; llama.cpp reads it but runs Phi-3 without a window, so a
//     windowed Phi-3 such as Phi-3-mini-4k attends to the whole context in llama.cpp past its 2047 tokens);
//     longrope: rope.scaling.type "longrope", rope.scaling.original_context_length, rope.scaling.attn_factor
//     (what multiplies cos and sin), and the tensors rope_factors_long.weight / rope_factors_short.weight
//     (gguf_rope_factor_tensors). llama.cpp picks the long factors when its context (rounded up to 256) is
//     longer than original_context_length; transformers (and we) when the sequence is: the same model on the
//     same positions whenever both pick the same list.
//   gemma3: rope.freq_base_swa (the sliding layers' base), final_logit_softcapping, attention.sliding_window
//     and attention.sliding_window_pattern (one u32 per layer, 1 where it slides, as llama.cpp's own
//     llama-model-saver writes it) when a layer slides. llama.cpp multiplies the embeddings by sqrt(hidden)
//     itself.
// Values (gguf_value_map): Gemma 3's RMSNorms scale by 1 + w where llama.cpp's scale by w, so every
// *norm.weight is written as 1 + w, as the converter does. llama.cpp scales Gemma 3's queries by
// head_dim^-0.5 (by (hidden / heads)^-0.5 for its 62-layer "27B"), not by query_pre_attn_scalar^-0.5: where
// the two differ, the q_norm weights (the last per-head scale before RoPE, which is linear) carry the ratio.
// For the published Gemma 3 checkpoints the two agree and q_norm is only shifted.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/gguf_mix.h"
#include "model/gguf_writer.h"

namespace ls::model {

// Throws ls::Error naming `config_path` when llama.cpp's architecture for `c` cannot run it as transformers
// does: rope scaling or a sliding window on Qwen2/Qwen3, Llama 3 rope outside "llama", longrope outside
// "phi3".
void check_gguf_expressible(const ModelConfig& c, const std::filesystem::path& config_path);

// The metadata above (the tokenizer's is model/gguf_vocab.h's); general.name is `name`.
void set_gguf_hparams(gguf::Writer& w, const ModelConfig& c, const std::filesystem::path& model_dir,
                      GgufFileType type, const std::string& name);

// A tensor's values as written: (v + add) · mul.
struct GgufValueMap {
  float add = 0, mul = 1;
};
GgufValueMap gguf_value_map(const ModelConfig& c, std::string_view hf_name);

// Tensors that are not the model's weights: rope_freqs.weight (Llama 3 rope: llama.cpp divides each rotation
// frequency by these, convert_hf_to_gguf.py's generate_extra_tensors), rope_factors_long/short.weight
// (longrope). Each [D/2] f32.
struct GgufExtraTensor {
  std::string name;
  std::vector<float> values;
};
std::vector<GgufExtraTensor> gguf_extra_tensors(const ModelConfig& c);

// The last part of a folder's path ("run-3" of "/x/run-3/"), for general.name.
std::string gguf_folder_name(const std::filesystem::path& dir);

// general.name for a model whose vocabulary holds `tokens`: `name`, except that llama.cpp (llama-vocab.cpp) gives
// a model whose name contains "phi3" or "phi-3" Phi-3's token attributes by looking up "</s>", "<unk>", "<s>"
// and "<|endoftext|>", and fails to load it when one is missing: then the name is written with "phi_3" instead.
std::string gguf_model_name(std::string name, const std::vector<std::string>& tokens);

}  // namespace ls::model
