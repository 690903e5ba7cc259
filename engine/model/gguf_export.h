#pragma once
// GGUF export for llama.cpp and Ollama (issue 17), CPU work on memory-mapped files; no device.
//
// export_model_gguf: a Hugging Face model folder (ours: Qwen2, Llama, Mistral) as a GGUF model, with the
//   metadata convert_hf_to_gguf.py writes: general.{architecture, type "model", name, file_type,
//   quantization_version}, <arch>.{context_length, embedding_length, block_count, feed_forward_length,
//   attention.head_count, attention.head_count_kv, rope.freq_base, attention.layer_norm_rms_epsilon}
//   (+ attention.key_length/value_length when config.json sets head_dim; llama: vocab_size and
//   rope.dimension_count; linear rope scaling: rope.scaling.type/factor; Llama 3 rope: a rope_freqs tensor),
//   the tokenizer (model/gguf_vocab.h) and chat template. Tensors named as llama.cpp names them
//   (model/gguf_names.h), q/k rows permuted for "llama". Norms, biases and rope_freqs are f32; matrices are
//   f16, bf16 or q8_0 (blocks of 32: d = max|x| / 127 stored as f16, q = round(x / d), as ggml's
//   quantize_row_q8_0_ref; a matrix whose rows are not whole blocks stays f16, as llama.cpp falls back).
// export_merged_gguf: the adapter merged into the model (model/merge.h, into a temporary folder beside
//   `out` that is removed afterwards), then exported as above.
// export_adapter_gguf: a PEFT adapter folder as a GGUF LoRA that llama.cpp's --lora and Ollama's ADAPTER
//   load: general.{architecture, type "adapter", name}, adapter.type "lora", adapter.lora.alpha, and for
//   each adapted projection blk.N.<gguf target>.weight.lora_a (A, ne [in, r]) and .lora_b (B, ne [r, out],
//   rows permuted as the base's for llama q/k), f32 as convert_lora_to_gguf.py writes by default.
//   llama.cpp scales by alpha / r; for rsLoRA (alpha / sqrt(r)) we write alpha·sqrt(r).
// Every file is written to a temporary name and renamed when complete (gguf::Writer). Throws ls::Error
// naming the file and the problem, before writing anything, for what GGUF cannot express: an architecture
// or rope scaling llama.cpp's qwen2/llama do not have, a tokenizer gguf_vocab.h does not write.
#include <filesystem>
#include <string>

#include "model/gguf_writer.h"

namespace ls::model {

enum class GgufFileType { f16, bf16, q8_0 };

// "f16", "bf16", "q8_0"; parse_gguf_file_type returns false for anything else.
const char* gguf_file_type_name(GgufFileType type);
bool parse_gguf_file_type(const std::string& text, GgufFileType& type);

void export_model_gguf(const std::filesystem::path& model_dir, const std::filesystem::path& out, GgufFileType type,
                       const gguf::Progress& progress = {});
void export_merged_gguf(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                        const std::filesystem::path& out, GgufFileType type, const gguf::Progress& progress = {});
void export_adapter_gguf(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                         const std::filesystem::path& out, const gguf::Progress& progress = {});

// q8_0 blocks of `n` floats (n a multiple of 32) into `out` (n / 32 · 34 bytes), as ggml's
// quantize_row_q8_0_ref.
void quantize_row_q8_0(const float* x, size_t n, std::byte* out);

}  // namespace ls::model
