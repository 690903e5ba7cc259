#include "ui/train_worker.h"

#include <chrono>
#include <optional>

#include "store/run_store.h"

namespace ls::ui {

TrainWorker::~TrainWorker() {
  stop();
  if (thread_.joinable()) thread_.join();
}

bool TrainWorker::start(vk::Device& device, train::TrainConfig config, Callbacks callbacks) {
  if (active_) return false;
  if (thread_.joinable()) thread_.join();  // the previous run has ended
  stop_ = false;
  checkpoint_now_ = false;
  paused_ = false;
  active_ = true;
  thread_ = std::thread([this, &device, config = std::move(config), callbacks = std::move(callbacks)] {
    run(device, config, callbacks);
    active_ = false;
  });
  return true;
}

void TrainWorker::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void TrainWorker::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
}

void TrainWorker::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
}

void TrainWorker::run(vk::Device& device, const train::TrainConfig& config, const Callbacks& callbacks) {
  try {
    auto result = train::train(device, config, [&](const train::StepReport& r) { return on_step(r, config, callbacks); },
                               &checkpoint_now_);
    callbacks.on_done(result);
  } catch (const std::exception& e) {
    callbacks.on_failed(e.what());
  }
}

// On the training thread after every step: report, then hold here while paused. mutex_ is never held
// across the run store's I/O, so pause/resume/stop on the UI thread return at once.
bool TrainWorker::on_step(const train::StepReport& r, const train::TrainConfig& config, const Callbacks& callbacks) {
  callbacks.on_step(r);
  {
    std::lock_guard lock(mutex_);
    if (!paused_ || stop_) return !stop_;
  }
  // Paused: the run store shows it, and the heartbeat stays fresh so no one marks the run stale.
  std::optional<store::RunStore> runs;
  try {
    runs.emplace(store::path_or_default(config.store));
    runs->set_status(r.run_id, store::RunStatus::paused);
  } catch (const std::exception&) {
    runs.reset();  // the store is the trainer's business; pausing works without it
  }
  callbacks.on_paused(true);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::seconds(5), [&] { return !paused_ || stop_; });
      if (!paused_ || stop_) break;
    }
    try {
      if (runs) runs->update_heartbeat(r.run_id);
    } catch (const std::exception&) {
    }
  }
  try {
    if (runs) runs->set_status(r.run_id, store::RunStatus::running);
  } catch (const std::exception&) {
  }
  callbacks.on_paused(false);
  return !stop_;
}

}  // namespace ls::ui
