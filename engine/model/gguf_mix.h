#pragma once
// Which ggml type each tensor of an exported GGUF model gets, per file type. Vectors (norms, biases,
// rope_freqs) are always f32; a matrix's type follows llama.cpp's llama_model_quantize (llama-quant.cpp:
// llama_tensor_get_type_impl, then tensor_type_fallback), so that our file has the types llama.cpp's own
// quantizer gives the f16 file (tests/model/gguf_llamacpp_test compares them tensor by tensor):
//   f16, bf16: every matrix in that type.
//   q8_0: q8_0.
//   q4_k_m (LLAMA_FTYPE_MOSTLY_Q4_K_M): q4_K, except
//     - output.weight, and token_embd.weight when the embeddings are tied (no output.weight): q6_K, or
//       q8_0 when its rows are not whole blocks of 256;
//     - attn_v (and Phi-3's fused attn_qkv, which llama.cpp counts as one) and ffn_down of the layers where use_more_bits(i, n) = i < n/8 || i >= 7n/8 ||
//       (i − n/8) % 3 == 2 (n layers; llama.cpp counts the tensors in layer order, one of each a layer,
//       so i is the layer): q6_K; on a model llama.cpp calls 70B (80 layers: "llama" with fewer KV heads
//       than heads, or "qwen2") the other attn_v get q5_K instead of q4_K.
//   A row that is not whole blocks of the chosen type falls back: q4_K → q5_0, q6_K → q8_0 (blocks of 32),
//   and a row that is not whole blocks of 32 either stays f16.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/gguf_types.h"

namespace ls::model {

enum class GgufFileType { f16, bf16, q8_0, q4_k_m };

// "f16", "bf16", "q8_0", "q4_k_m"; parse_gguf_file_type also takes upper case ("Q4_K_M") and returns
// false for anything else.
const char* gguf_file_type_name(GgufFileType type);
bool parse_gguf_file_type(const std::string& text, GgufFileType& type);
// general.file_type: llama.h's llama_ftype.
uint32_t gguf_llama_ftype(GgufFileType type);

struct GgufMixModel {
  uint32_t layers = 0;
  bool tied_embeddings = false;  // the file has token_embd.weight and no output.weight
  bool type_70b = false;         // llama.cpp's LLM_TYPE_70B (see above)
};

// The type of the matrix `gguf_name` (e.g. "blk.3.attn_v.weight") whose rows hold `cols` values. When its rows
// are not whole blocks of the type the mix names (256 values for the k-quants, 32 for q8_0), a smaller block
// type as llama.cpp's tensor_type_fallback picks, and *wanted (if given) is the type it fell back from.
gguf::TensorType gguf_matrix_type(GgufFileType type, std::string_view gguf_name, uint64_t cols,
                                  const GgufMixModel& model, std::optional<gguf::TensorType>* wanted = nullptr);

}  // namespace ls::model
