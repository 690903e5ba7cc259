#include "ui/views.h"

namespace ls::ui {

const char* train_state_name(TrainState s) {
  switch (s) {
    case TrainState::idle: return "not started";
    case TrainState::starting: return "starting";
    case TrainState::running: return "running";
    case TrainState::paused: return "paused";
    case TrainState::stopping: return "stopping (writing a checkpoint)";
    case TrainState::finished: return "finished";
    case TrainState::stopped: return "stopped";
    case TrainState::failed: return "failed";
  }
  return "?";
}

// The GUI's defaults differ from --batch's where a first run in the window should show something
// quickly: a fixed number of steps, a higher learning rate, GPU timing on.
TrainSettings::TrainSettings() {
  config.steps = 100;
  config.schedule.lr = 1e-3f;
  config.schedule.warmup_steps = 0;
  config.profile = true;
  config.data_options.max_seq_len = 1024;
}

const store::RunInfo* RunsView::find(int64_t id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace ls::ui
