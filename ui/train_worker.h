#pragma once
// Runs train::train on its own thread and steers it from the UI thread without waiting for it, through a
// train::RunControl: pause (the trainer holds after its step until resumed; it shows the run as paused in
// the run store, with its heartbeat kept fresh), resume, stop (a checkpoint is written), checkpoint now.
// Progress and the end of the run arrive through the callbacks, on the training thread.
#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "train/run_control.h"
#include "train/trainer.h"
#include "vk/device.h"

namespace ls::ui {

class TrainWorker {
 public:
  struct Callbacks {
    std::function<void(const train::StepReport&)> on_step;
    std::function<void(bool paused)> on_paused;
    std::function<void(const train::TrainResult&)> on_done;
    std::function<void(const std::string& error)> on_failed;
  };

  TrainWorker() = default;
  ~TrainWorker();  // stops a run (writing its checkpoint) and joins
  TrainWorker(const TrainWorker&) = delete;
  TrainWorker& operator=(const TrainWorker&) = delete;

  // Starts a run; false when one is still going.
  bool start(vk::Device& device, train::TrainConfig config, Callbacks callbacks);
  bool active() const { return active_.load(); }
  void pause() { control_.pause(); }
  void resume() { control_.resume(); }
  void stop() { control_.stop(); }
  void checkpoint_now() { control_.checkpoint_now(); }

 private:
  void run(vk::Device& device, const train::TrainConfig& config, const Callbacks& callbacks);

  std::thread thread_;
  std::atomic<bool> active_{false};
  std::function<void(bool)> on_paused_;  // this run's Callbacks::on_paused, which control_ calls
  train::RunControl control_{[this](bool paused) {
    if (on_paused_) on_paused_(paused);
  }};
};

}  // namespace ls::ui
