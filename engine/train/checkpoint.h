#pragma once
// Checkpoints of a training run: a folder checkpoint-N in the run folder holding the PEFT adapter after
// step N, the AdamW moments (optimizer.safetensors) and trainer_state.json (the step, the data position,
// and the run-store entry the run writes to, so that a resumed run continues that entry).
//
// A checkpoint folder appears whole or not at all: it is written as checkpoint-N.partial.<pid> and renamed
// into place, so a kill or a full disk mid-write never leaves a checkpoint-N that cannot be resumed. A
// failed write removes its partial folder; one left by a killed process is removed by
// remove_interrupted_writes() when a run starts in that folder again.
#include <cstdint>
#include <filesystem>
#include <optional>

#include "model/lora.h"
#include "model/config.h"
#include "train/batcher.h"
#include "vk/device.h"

namespace ls::train {

// What trainer_state.json says besides the data position.
struct CheckpointState {
  uint32_t step = 0;                    // the checkpoint was taken after this step
  std::optional<int64_t> run_id;        // the run-store entry that wrote it (absent in older checkpoints)
  std::filesystem::path store;          // the store that entry is in (empty in older checkpoints)
};

// "checkpoint-N" inside `out`.
std::filesystem::path checkpoint_dir(const std::filesystem::path& out, uint32_t step);

// Writes checkpoint-`step` in `out` atomically (see above); an older folder of that name is replaced.
// Throws ls::Error naming the file that could not be written.
void write_checkpoint(const std::filesystem::path& out, uint32_t step, const model::LoraAdapter& adapter,
                      const model::LoraAdapter& m1, const model::LoraAdapter& m2, const model::ModelConfig& mc,
                      const std::filesystem::path& model_path, const BatcherState& data, const CheckpointState& state);

// Reads a checkpoint folder's trainer_state.json. Throws ls::Error naming the file when it is missing or
// malformed ("is <dir> a checkpoint folder?").
CheckpointState read_checkpoint_state(const std::filesystem::path& dir);

// Loads a checkpoint into the adapter and moments (same shapes as when written) and restores the data
// position. Returns the step it was taken after.
uint32_t load_checkpoint(vk::Device& dev, const std::filesystem::path& dir, const model::ModelConfig& mc,
                         model::LoraAdapter& adapter, model::LoraAdapter& m1, model::LoraAdapter& m2, Batcher& batcher);

// Removes, in `out` and in its folders one level down, what a process that died mid-write left behind:
// "<name>.tmp.<pid>" files (util/atomic_file.h) and "<name>.partial.<pid>" folders, when that pid is no
// longer a running process. Returns how many it removed.
int remove_interrupted_writes(const std::filesystem::path& out);

// The complete checkpoint of `out` with the largest step, if any.
std::optional<std::filesystem::path> latest_checkpoint_in(const std::filesystem::path& out);

}  // namespace ls::train
