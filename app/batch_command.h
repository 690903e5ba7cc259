#pragma once
// `lorastudio --batch`: headless LoRA training with options named as mlx-lm and PEFT users expect,
// each also settable in a TOML file (--config run.toml, keys named like the long options; app/toml_config.h).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "train/trainer.h"

namespace ls::app {

struct BatchArgs {
  train::TrainConfig config;
  std::string targets, schedule = "linear", quantize = "none", on_non_finite = "stop", store, device;
  float val_fraction = 0;
  bool quiet = false;
  bool plan = false;  // --plan: print the memory plan instead of training
  BatchArgs() { config.out = "lorastudio-run"; }
};

// Adds the training options to `app` (the top level, next to --batch).
void add_batch_options(CLI::App& app, BatchArgs& args);
// Trains; returns the exit code (0 done, 1 error, 130 stopped by Ctrl-C after writing a checkpoint).
int run_batch(BatchArgs& args);
// The training loop of run_batch (also `lorastudio --demo`'s): progress on stderr (a bar on a terminal,
// else a line per step; nothing when quiet), Ctrl-C stops after a checkpoint, a summary line at the end.
train::TrainResult train_with_progress(vk::Device& device, const train::TrainConfig& config, bool quiet);

// The training configuration the options give: the comma list of targets and the schedule's name parsed,
// the data seed set from --seed. Throws ls::Error naming the option with a bad value.
train::TrainConfig resolve_batch_args(const BatchArgs& args);
// The resolved configuration of a --batch TOML file (`--config FILE`: every key an option, the rest
// defaults), as a run folder's config.json holds it (train::config_json). Throws ls::Error naming the file.
std::string resolved_config_json(const std::filesystem::path& toml_file);

}  // namespace ls::app
