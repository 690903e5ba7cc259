#pragma once
// Which run-store entry a training writes to. A new training gets a new entry. A training resumed from a
// checkpoint continues the entry that wrote the checkpoint (trainer_state.json names it) when that entry is
// in this store and belongs to the same run folder: same id, its metrics after the checkpoint's step (the
// cut-off attempt's) dropped so the curve stays one series, a "resumed" event, status running again.
// Otherwise (another store, a deleted entry, a checkpoint of another folder or of an older lorastudio) it
// gets a new entry whose "resumed" event says why; from a checkpoint of another run in this store, the
// new entry starts with a copy of that run's metrics up to the checkpoint.
#include <cstdint>
#include <filesystem>
#include <string>

#include "store/run_store.h"
#include "train/checkpoint.h"

namespace ls::train {

struct RunEntry {
  int64_t id = 0;
  bool continued = false;  // an existing entry goes on
};

// Opens the entry for a training into folder `out` (already created), resumed from checkpoint folder
// `resume` (with its state) or not (empty). Leaves the entry in status running. Throws ls::Error when the
// entry to continue is still being written by a live process.
RunEntry open_run_entry(store::RunStore& runs, const store::NewRun& fresh, const std::filesystem::path& resume,
                        const CheckpointState& state);

}  // namespace ls::train
