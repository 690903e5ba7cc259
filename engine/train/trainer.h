#pragma once
// The training loop: a model folder and a JSONL file in, a PEFT adapter folder out. Each optimizer step
// replays recorded programs (zero the gradients; forward+backward per micro-batch; global grad norm,
// clip and AdamW) with the batch and the step's hyper-parameters written into host-visible tensors
// (docs/design.md "Record once, replay many"). Progress goes to a callback and to the SQLite run store.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/lora.h"
#include "store/run_store.h"
#include "tensor/quant.h"
#include "train/dataset.h"
#include "train/run_control.h"
#include "train/schedule.h"
#include "vk/device.h"

namespace ls::train {

// What a step whose loss or gradient norm is NaN or infinite does (--on-nonfinite). Either way its update
// never reaches the weights or the AdamW moments.
enum class NonFinitePolicy {
  stop,  // save the adapter (the previous step's weights) and fail the run with a message naming the step
  skip,  // drop the step's update, record a "skipped" event in the run store, and go on with the next batch
};
std::optional<NonFinitePolicy> parse_non_finite_policy(std::string_view name);  // "stop" or "skip"
const char* non_finite_policy_name(NonFinitePolicy policy);
// A run with --on-nonfinite skip that skips this many steps in a row stops as --on-nonfinite stop does:
// its weights are no longer going anywhere.
inline constexpr uint32_t kMaxConsecutiveSkips = 20;

struct TrainConfig {
  std::filesystem::path model;       // Hugging Face model folder
  std::filesystem::path data;        // training JSONL
  std::filesystem::path out;         // run folder: adapter/, checkpoint-N/, config.json, metrics.csv
  std::filesystem::path store;       // run store (SQLite); empty: store::default_store_path()
  DatasetOptions data_options;       // sequence length, epochs, seed, validation, packing, ...
  std::vector<model::LoraTarget> targets = {model::LoraTarget::q_proj, model::LoraTarget::v_proj};
  uint32_t rank = 8;
  float alpha = 16;
  float dropout = 0;                 // LoRA dropout on each adapted projection's input, in [0, 1)
  bool grad_checkpoint = false;      // recompute each layer's activations in the backward (less memory)
  bool rslora = false;
  QuantType quantize = QuantType::none;  // the base's projection weights in 4 or 8 bits (QLoRA)
  uint32_t batch_size = 1;
  uint32_t grad_accum = 1;
  uint32_t steps = 0;                // optimizer steps; 0: as many as the epochs give
  ScheduleOptions schedule;          // lr, kind, warmup (total_steps is filled in)
  OptimizerHyper optimizer;
  uint32_t val_every = 0;            // steps between validation losses (0: only at the end, if any validation data)
  uint32_t save_every = 0;           // steps between checkpoints (0: only at the end)
  uint64_t seed = 0;                 // LoRA initialisation (data order uses data_options.seed)
  std::filesystem::path resume;      // a checkpoint-N folder of an earlier run with the same options
  bool profile = false;              // GPU time per op group every step (timestamps around each dispatch)
  NonFinitePolicy on_non_finite = NonFinitePolicy::stop;
};

struct StepReport {
  int64_t run_id = 0;                // in the run store
  uint32_t step = 0, total = 0;      // 1-based step of total
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
  std::optional<double> val_loss;
  uint32_t trained_tokens = 0;
  // With --on-nonfinite skip, a step whose loss or gradient norm was not finite: its update was dropped,
  // loss or grad_norm is the NaN or infinity seen, skip_reason says which, and no metrics row was stored.
  bool skipped = false;
  std::string skip_reason;
  // With TrainConfig::profile: GPU milliseconds of the step per op group (embedding, norms, attention,
  // mlp, lora, loss, optimizer), summed over its micro-batches, in that order.
  std::vector<store::GpuTime> gpu_ms;
};

// What a run is about to do, told once before its first step: its shape and its memory plan's total
// (train/memory_plan.h), which the trainer checked against the device before loading the weights.
struct RunStart {
  int64_t run_id = 0;
  uint32_t total_steps = 0, batch = 0, seq_len = 0;
  uint64_t planned_bytes = 0, available_bytes = 0;
  std::string memory;  // "GPU memory: 1.20 GiB planned of 79.10 GiB available"
};

struct TrainResult {
  uint32_t steps = 0;
  double first_loss = 0, last_loss = 0;
  std::optional<double> last_val_loss;
  std::filesystem::path adapter_dir;
  int64_t run_id = 0;
  bool stopped = false;              // the callback asked to stop (a checkpoint was written)
  uint32_t skipped_steps = 0;        // steps whose update was dropped (--on-nonfinite skip)
};

// Throws ls::Error naming the option for values out of range.
void validate(const TrainConfig& config);
// The resolved configuration as JSON (saved with the run).
std::string config_json(const TrainConfig& config);

// Trains. on_step is called after every optimizer step; returning false stops after writing a checkpoint.
// control, if given, steers the run from another thread (train/run_control.h): after on_step, a paused
// run holds, marked paused in the run store with its heartbeat fresh, and is marked running again when
// resumed; a stop request stops it as on_step's false does; a checkpoint request writes a checkpoint.
// on_warning, if set, gets each of the data set's warnings (skipped lines "skipped <file>:<line>:
// problem" with skip_bad_lines, examples cut to the sequence length) and the chat template's, before the
// first step. Before loading the weights it plans the run's memory and throws ls::Error saying what to change
// when the plan does not fit the device (train/plan_fit.h); on_start, if set, gets the run's start.
TrainResult train(vk::Device& device, const TrainConfig& config, const std::function<bool(const StepReport&)>& on_step,
                  RunControl* control = nullptr,
                  const std::function<void(const std::string&)>& on_warning = {},
                  const std::function<void(const RunStart&)>& on_start = {});

}  // namespace ls::train
