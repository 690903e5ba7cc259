#pragma once
// Merging a PEFT LoRA adapter into its base model: a new model folder that transformers (and we) load
// as a plain model, no PEFT needed. CPU work on memory-mapped files; no device.
//
// For each adapted projection W [out, in] (f32, f16 or bf16), with the adapter's A [r, in], B [out, r]:
//   W' = W + scale·B·A,  scale = lora_alpha / r  (use_rslora: lora_alpha / sqrt(r))
// the r-term accumulated in double, the sum W + scale·(B·A) taken in f32, then rounded back to W's dtype
// to nearest even (NaN stays NaN, inf stays inf, a finite value past the dtype's range becomes inf).
// Every other tensor is copied byte for byte: same name, dtype and shape, in the base's order.
//
// The output folder holds
//   config.json (required), generation_config.json, the tokenizer files (tokenizer.json,
//   tokenizer_config.json, special_tokens_map.json, added_tokens.json, vocab.json, vocab.txt, merges.txt,
//   tokenizer.model), chat templates (chat_template.jinja, chat_template.json,
//   additional_chat_templates/) and LICENSE*/NOTICE* files: copied as they are, when present;
//   model.safetensors, or, when the tensors pass max_shard_bytes, model-00001-of-0000N.safetensors ...
//   with model.safetensors.index.json ({"metadata": {"total_size": bytes}, "weight_map": {name: shard}}),
//   split as transformers' save_pretrained splits: tensors in the base's order, a new shard when the next
//   tensor would pass the limit (a tensor bigger than the limit gets a shard of its own). Each file's
//   "__metadata__" is the base's (first file's), with "format": "pt" (transformers requires it).
// Weight files are written a tensor at a time (merged tensors a slab of rows at a time), so memory holds
// neither the model nor a shard, only the maps of the inputs.
//
// The folder is built as out_dir + ".tmp-<pid>" and renamed into place at the end: a failure leaves no
// half-written out_dir (and an existing one untouched).
#include <cstdint>
#include <filesystem>

namespace ls::model {

struct MergeOptions {
  uint64_t max_shard_bytes = 5'000'000'000;  // as transformers' max_shard_size="5GB" (10^9, not 2^30)
  bool overwrite = false;                    // replace an existing non-empty out_dir
};

struct MergeReport {
  size_t merged = 0, copied = 0;  // tensors
  size_t shards = 0;              // weight files written
  uint64_t bytes = 0;             // tensor bytes written (the index's total_size)
};

// Throws ls::Error naming the file and the problem, before anything is written, when:
//   - model_dir lacks config.json or its weights (model.safetensors or model.safetensors.index.json), or
//     adapter_dir lacks adapter_config.json or adapter_model.safetensors;
//   - adapter_config.json sets what we do not merge (use_dora, fan_in_fan_out, bias other than "none",
//     lora_bias, rank_pattern, alpha_pattern, modules_to_save, a target_modules regex; see peft_adapter.h);
//   - a tensor of adapter_model.safetensors is not base_model.model.<module>.lora_A/lora_B.weight of a
//     target module, has no partner, or adapts a <module>.weight the base does not hold;
//   - A and B disagree on the rank, or the rank is not adapter_config.json's "r";
//   - A's in or B's out differ from W's [out, in] (an adapter for another model or architecture);
//   - out_dir exists and is not an empty folder (unless options.overwrite), is a file, or is one of the
//     input folders.
MergeReport merge_adapter(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                          const std::filesystem::path& out_dir, const MergeOptions& options = {});

}  // namespace ls::model
