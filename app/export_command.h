#pragma once
// `lorastudio export`: a trained adapter or run in a form other programs run.
//   export --merge --model DIR --adapter DIR --out DIR [--run RUN]
//     the base model with the adapter merged into its weights: a safetensors model folder (config.json,
//     tokenizer files, model.safetensors or shards + index) that transformers loads without PEFT
//     (model/merge.h); --run records the export under that run of the run store.
//   export --trl DIR (--run RUN | --config FILE) [--init-adapter DIR] [--copy-data]
//     a PyTorch script and config that train with the run's hyperparameters under TRL + PEFT, on one or
//     many GPUs (app/trl_export.h). FILE is a run folder's config.json or a --batch TOML file.
//   export --gguf DIR --model DIR --adapter DIR [--gguf-type f16|bf16|q8_0|q4_k_m] [--run RUN]
//     for llama.cpp and Ollama (model/gguf_export.h): DIR/model-<type>.gguf, the model with the adapter merged
//     in; DIR/adapter.gguf, the adapter as a GGUF LoRA (llama.cpp --lora, Ollama ADAPTER, over a GGUF of
//     the same base); DIR/Modelfile, "FROM ./model-<type>.gguf", so that `ollama create NAME -f
//     DIR/Modelfile` runs as it is.
// RUN is a run's number in the run store or its folder. The adapter folder itself is already PEFT's
// format and needs no export.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ls::app {

struct ExportArgs {
  std::string model, adapter, out, max_shard_size = "5GB", store;
  std::string run;                   // a run: its number in the run store or its folder; empty: none
  std::string trl, config, init_adapter;  // --trl DIR, its source --config FILE, --init-adapter DIR
  std::string gguf, gguf_type = "f16";    // --gguf DIR, --gguf-type
  bool merge = false, force = false, copy_data = false;
};

// Adds the export options to its subcommand.
void add_export_options(CLI::App& cmd, ExportArgs& args);
// Returns the exit code: 0 written, 2 without --merge, --trl or --gguf; errors throw ls::Error.
int run_export(const ExportArgs& args);

// A size as transformers' max_shard_size spells it, in bytes: "5GB" (10^9), "500MB", "100KB", "2GiB"
// (2^30), "1.5GB", "1000" or "1000B"; units in any case. nullopt for anything else, or for 0.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace ls::app
