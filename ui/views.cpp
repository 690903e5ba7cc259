#include "ui/views.h"

#include <algorithm>

#include "model/lora_init.h"

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

void fit_targets(TrainSettings& s, const model::ModelConfig& c) {
  std::vector<model::LoraTarget> ticked;
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)
    if (s.targets[i]) ticked.push_back(model::LoraTarget(i));
  std::fill(std::begin(s.targets), std::end(s.targets), false);
  for (model::LoraTarget t : model::fit_targets(c, ticked)) s.targets[size_t(t)] = true;
}

const store::RunInfo* RunsView::find(int64_t id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

namespace {
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : r;
}
}  // namespace

const store::RunInfo* RunsView::owner_of(const fs::path& adapter) const {
  const fs::path a = resolved(adapter);
  for (const auto& r : runs) {
    if (r.out_dir.empty()) continue;
    const fs::path out = resolved(r.out_dir);
    const auto [end, _] = std::mismatch(out.begin(), out.end(), a.begin(), a.end());
    if (end == out.end()) return &r;
  }
  return nullptr;
}

bool trained_on(const store::RunInfo& run, const fs::path& model) {
  return !run.model_path.empty() && resolved(run.model_path) == resolved(model);
}

}  // namespace ls::ui
