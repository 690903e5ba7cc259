#pragma once
// `lorastudio export`: a trained adapter in a form other programs run. One form so far:
//   export --merge --model DIR --adapter DIR --out DIR
// writes the base model with the adapter merged into its weights: a safetensors model folder
// (config.json, tokenizer files, model.safetensors or shards + index) that transformers loads without
// PEFT (model/merge.h). The adapter folder itself is already PEFT's format and needs no export.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ls::app {

struct ExportArgs {
  std::string model, adapter, out, max_shard_size = "5GB", store;
  int64_t run = -1;  // the run store's run to record the export under; -1: none
  bool merge = false, force = false;
};

// Adds the export options to its subcommand.
void add_export_options(CLI::App& cmd, ExportArgs& args);
// Returns the exit code: 0 written, 2 without --merge (the only export so far); errors throw ls::Error.
int run_export(const ExportArgs& args);

// A size as transformers' max_shard_size spells it, in bytes: "5GB" (10^9), "500MB", "100KB", "2GiB"
// (2^30), "1.5GB", "1000" or "1000B"; units in any case. nullopt for anything else, or for 0.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace ls::app
