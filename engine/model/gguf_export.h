#pragma once
// GGUF export for llama.cpp and Ollama (issue 17), CPU work on memory-mapped files; no device.
//
// export_model_gguf: a Hugging Face model folder (Qwen2, Qwen3, Llama, Mistral, Phi-3, Gemma 3 and the language
//   model of a Gemma3ForConditionalGeneration folder) as a GGUF model with the metadata convert_hf_to_gguf.py
//   writes (model/gguf_hparams.h: per-family keys, Llama 3 rope_freqs, Phi-3's longrope factor tensors, Gemma 3's
//   1 + w norms), the tokenizer (model/gguf_vocab.h) and chat template. Tensors named as llama.cpp names them
//   (model/gguf_names.h), q/k rows permuted for "llama". Norms, biases and rope factors are f32; matrices are
//   f16, bf16, q8_0 or llama.cpp's Q4_K_M mix (model/gguf_mix.h says which type each gets, as llama.cpp's
//   llama_model_quantize chooses, fallbacks for rows that are not whole blocks included), quantized from
//   the f32 values as ggml's reference quantizers do (model/gguf_quants.h) on all cores.
// export_merged_gguf: the adapter merged into the model (model/merge.h, into a temporary folder beside
//   `out` that is removed afterwards), then exported as above.
// export_adapter_gguf: a PEFT adapter folder as a GGUF LoRA that llama.cpp's --lora and Ollama's ADAPTER
//   load: general.{architecture, type "adapter", name}, adapter.type "lora", adapter.lora.alpha, and for
//   each adapted projection blk.N.<gguf target>.weight.lora_a (A, ne [in, r]) and .lora_b (B, ne [r, out],
//   rows permuted as the base's for llama q/k), f32 as convert_lora_to_gguf.py writes by default (Phi-3:
//   attn_qkv and ffn_up for its fused projections).
//   llama.cpp scales by alpha / r; for rsLoRA (alpha / sqrt(r)) we write alpha·sqrt(r).
// Every file is written to a temporary name and renamed when complete (gguf::Writer). Throws ls::Error
// naming the file and the problem, before writing anything, for what GGUF cannot express
// (check_gguf_expressible in model/gguf_hparams.h: rope scaling or a window llama.cpp's architecture does not
// read), a tokenizer gguf_vocab.h does not write.
#include <filesystem>
#include <string>
#include <vector>

#include "model/gguf_mix.h"
#include "model/gguf_writer.h"

namespace ls::model {

// Both return notes for the user, one line each: matrices written in a smaller block type than the file type's
// mix names, because their rows are not whole blocks of it (e.g. q4_k_m of rows of 896 values: q5_0).
std::vector<std::string> export_model_gguf(const std::filesystem::path& model_dir, const std::filesystem::path& out,
                                           GgufFileType type, const gguf::Progress& progress = {});
std::vector<std::string> export_merged_gguf(const std::filesystem::path& model_dir,
                                            const std::filesystem::path& adapter_dir, const std::filesystem::path& out,
                                            GgufFileType type, const gguf::Progress& progress = {});
void export_adapter_gguf(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                         const std::filesystem::path& out, const gguf::Progress& progress = {});

}  // namespace ls::model
