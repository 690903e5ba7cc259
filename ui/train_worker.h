#pragma once
// Runs train::train on its own thread and steers it from the UI thread without waiting for it:
// pause (the trainer blocks inside its step callback until resumed; the run shows as paused in the run
// store, with its heartbeat kept fresh), resume, stop (a checkpoint is written), checkpoint now.
// Progress and the end of the run arrive through the callbacks, on the training thread.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

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
  void pause();
  void resume();
  void stop();
  void checkpoint_now() { checkpoint_now_ = true; }

 private:
  void run(vk::Device& device, const train::TrainConfig& config, const Callbacks& callbacks);
  bool on_step(const train::StepReport& r, const train::TrainConfig& config, const Callbacks& callbacks);

  std::thread thread_;
  std::atomic<bool> active_{false}, stop_{false}, checkpoint_now_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;  // guarded by mutex_
};

}  // namespace ls::ui
