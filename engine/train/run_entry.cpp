#include "train/run_entry.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <system_error>

#include "error.h"

namespace ls::train {

namespace fs = std::filesystem;

namespace {

// Past this a heartbeat is stale whatever the pid says (as the app's sweep, ui/studio.cpp kStaleAfterS).
constexpr double kStaleAfterS = 300;

bool same_folder(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// Another process that is alive and kept the run's heartbeat fresh is training it now.
bool written_by_another_process(const store::RunInfo& r) {
  if (r.status != store::RunStatus::running && r.status != store::RunStatus::paused) return false;
  if (!r.writer_pid || *r.writer_pid == ::getpid() || *r.writer_pid <= 0) return false;
  if (!r.heartbeat_at || *r.heartbeat_at < store::unix_now() - kStaleAfterS) return false;
  return ::kill(pid_t(*r.writer_pid), 0) == 0 || errno == EPERM;
}

// The entry that wrote the checkpoint: named by trainer_state.json (with the store it is in: ids of two
// stores collide), or, for checkpoints of older versions, found by its folder in the checkpoints table.
std::optional<store::RunInfo> checkpoint_owner(const store::RunStore& runs, const fs::path& resume,
                                               const CheckpointState& state) {
  if (state.run_id) {
    if (!state.store.empty() && !same_folder(state.store, runs.path())) return std::nullopt;
    return runs.find_run(*state.run_id);
  }
  for (const auto& r : runs.list_runs())
    for (const auto& c : runs.checkpoints(r.id))
      if (c.step == state.step && same_folder(c.path, resume)) return r;
  return std::nullopt;
}

}  // namespace

RunEntry open_run_entry(store::RunStore& runs, const store::NewRun& fresh, const fs::path& resume,
                        const CheckpointState& state) {
  if (resume.empty()) {
    const int64_t id = runs.create_run(fresh);
    runs.set_status(id, store::RunStatus::running);
    return {.id = id};
  }
  const std::string at = "resumed at step " + std::to_string(state.step) + " from " + resume.string();
  const auto owner = checkpoint_owner(runs, resume, state);
  // Same id and same run folder: the checkpoint's own entry (an id alone could be another store's run).
  if (owner && same_folder(owner->out_dir, fresh.out_dir)) {
    if (written_by_another_process(*owner))
      throw Error(runs.path().string() + ": run " + std::to_string(owner->id) + " (" + owner->out_dir.string() +
                  ") is being trained by process " + std::to_string(*owner->writer_pid) + "; stop it before resuming");
    runs.resume_run(owner->id, state.step, at);
    // The kill may have come between the checkpoint's rename and its row.
    runs.add_checkpoint(owner->id, state.step, resume);
    runs.set_status(owner->id, store::RunStatus::running);
    return {.id = owner->id, .continued = true};
  }
  const int64_t id = runs.create_run(fresh);
  std::string why;
  if (owner) {
    runs.copy_metrics(owner->id, id, state.step);
    why = "; a checkpoint of run " + std::to_string(owner->id) + " (" + owner->out_dir.string() +
          "), whose entry stays as it is; its steps 1-" + std::to_string(state.step) + " copied here";
  } else if (state.run_id) {
    why = "; the checkpoint's run " + std::to_string(*state.run_id) +
          (state.store.empty() ? std::string() : " of " + state.store.string()) + " is not in this store (" +
          runs.path().string() + "), so this is a new entry";
  } else {
    why = "; the checkpoint names no run of this store, so this is a new entry";
  }
  runs.add_event(id, store::kEventResumed, state.step, at + why);
  runs.set_status(id, store::RunStatus::running);
  return {.id = id};
}

}  // namespace ls::train
