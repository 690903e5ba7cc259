#include "model/gguf_mix.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace ls::model {
namespace {

using gguf::TensorType;

// The layer of "blk.N.<...>", or -1.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int layer = -1;
  const char* begin = name.data() + 4;
  const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), layer);
  return ec == std::errc() && end != begin && *end == '.' ? layer : -1;
}

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// tensor_type_fallback: a type whose blocks the rows can hold; *wanted says which type it replaced.
TensorType fallback(TensorType type, uint64_t cols, std::optional<TensorType>* wanted) {
  if (cols % gguf::type_traits(type).block == 0) return type;
  if (wanted) *wanted = type;
  TensorType smaller = type;
  if (type == TensorType::q4_k) smaller = TensorType::q5_0;
  if (type == TensorType::q6_k) smaller = TensorType::q8_0;
  return cols % gguf::type_traits(smaller).block == 0 ? smaller : TensorType::f16;
}

TensorType q4_k_m_type(std::string_view name, uint64_t cols, const GgufMixModel& m,
                       std::optional<TensorType>* wanted) {
  const bool output = name == "output.weight" || (m.tied_embeddings && name == "token_embd.weight");
  if (output) return fallback(TensorType::q6_k, cols, wanted);  // q8_0 where rows are not whole q6_k blocks
  const int layer = layer_of(name), n = int(m.layers);
  // llama.cpp counts a fused attn_qkv (Phi-3) as an attn_v (category_is_attn_v).
  const bool attn_v = name.ends_with(".attn_v.weight") || name.ends_with(".attn_qkv.weight");
  const bool promoted = attn_v || name.find("ffn_down") != std::string_view::npos;
  if (promoted && layer >= 0 && use_more_bits(layer, n)) return fallback(TensorType::q6_k, cols, wanted);
  if (attn_v && m.type_70b && cols % 256 == 0) return TensorType::q5_k;  // 70B rows: 8192, whole blocks
  return fallback(TensorType::q4_k, cols, wanted);
}

}  // namespace

const char* gguf_file_type_name(GgufFileType type) {
  switch (type) {
    case GgufFileType::f16: return "f16";
    case GgufFileType::bf16: return "bf16";
    case GgufFileType::q8_0: return "q8_0";
    case GgufFileType::q4_k_m: return "q4_k_m";
  }
  return "?";
}

bool parse_gguf_file_type(const std::string& text, GgufFileType& type) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (GgufFileType t : {GgufFileType::f16, GgufFileType::bf16, GgufFileType::q8_0, GgufFileType::q4_k_m})
    if (lower == gguf_file_type_name(t)) {
      type = t;
      return true;
    }
  return false;
}

uint32_t gguf_llama_ftype(GgufFileType type) {
  switch (type) {
    case GgufFileType::f16: return 1;      // LLAMA_FTYPE_MOSTLY_F16
    case GgufFileType::bf16: return 32;    // LLAMA_FTYPE_MOSTLY_BF16
    case GgufFileType::q8_0: return 7;     // LLAMA_FTYPE_MOSTLY_Q8_0
    case GgufFileType::q4_k_m: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  }
  return 0;
}

gguf::TensorType gguf_matrix_type(GgufFileType type, std::string_view name, uint64_t cols, const GgufMixModel& m,
                                  std::optional<gguf::TensorType>* wanted) {
  if (wanted) wanted->reset();
  switch (type) {
    case GgufFileType::f16: return TensorType::f16;
    case GgufFileType::bf16: return TensorType::bf16;
    case GgufFileType::q8_0: return fallback(TensorType::q8_0, cols, wanted);
    case GgufFileType::q4_k_m: return q4_k_m_type(name, cols, m, wanted);
  }
  return TensorType::f16;
}

}  // namespace ls::model
