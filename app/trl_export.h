#pragma once
// `lorastudio export --trl DIR`: a run's hyperparameters as a PyTorch training script, so that the same
// JSONL (and the run's adapter, to continue it) trains on one or many GPUs with TRL's SFTTrainer and a
// PEFT LoraConfig (or transformers' Trainer where TRL is missing). DIR gets:
//   train_trl.py     the script (app/trl/train_trl.py, embedded at build time; the same for every run)
//   trl_config.json  the run's values, read by the script:
//     {"lorastudio": {"version", "source"},          where the values came from (a run folder, a run
//                                                     store's run, a config file)
//      "model": PATH, "init_adapter": PATH or null,
//      "data": {"train", "validation" (PATH or null), "validation_fraction", "max_seq_len",
//               "train_on_prompt", "pack", "shuffle", "seed"},
//      "lora": {"r", "lora_alpha", "lora_dropout", "target_modules", "use_rslora", "bias", "task_type"}
//                                                     = peft.LoraConfig's arguments
//      "training": {"learning_rate", "lr_scheduler_type", "warmup_steps", "max_steps",
//                   "num_train_epochs", "per_device_train_batch_size", "gradient_accumulation_steps",
//                   "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm",
//                   "seed", "data_seed", "optim", "save_strategy", "eval_strategy", ...}}
//                                                     = transformers.TrainingArguments / trl.SFTConfig's
//     Paths are absolute, or relative to DIR (the copied data with --copy-data). Floats are the shortest
//     decimals that read back as the run's float values (lr 2e-4 is 0.0002, not 0.000199999...).
//   README.md        how to run it, and what maps to what
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace ls::app {

struct TrlExportOptions {
  std::filesystem::path dir;           // the folder to write: absent, empty, or (overwrite) ours to rewrite
  std::filesystem::path init_adapter;  // optional: a PEFT adapter folder the script starts from
  bool copy_data = false;              // copy the JSONL files (and init_adapter) into dir
  bool overwrite = false;              // rewrite our files in a non-empty dir (other files stay)
  std::string source;                  // what the run config came from, for the files' headers
};

// The run config (the JSON of a run folder's config.json: train::config_json) as trl_config.json,
// with its paths as given (the caller resolves them). Throws ls::Error naming `where` and the key
// when a value is missing or of the wrong type.
nlohmann::json trl_config(const nlohmann::json& run_config, const std::string& where);

// Writes train_trl.py, trl_config.json and README.md into options.dir (data/ with copy_data).
// Relative paths in the run config are taken from the current directory. Returns trl_config.json's
// values as written. Throws ls::Error naming the path on any problem.
nlohmann::json write_trl_export(const nlohmann::json& run_config, const TrlExportOptions& options);

// The script, as embedded (app/trl/train_trl.py).
std::string_view train_trl_script();

}  // namespace ls::app
