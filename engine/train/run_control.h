#pragma once
// Steering a training run from another thread (the app's UI): pause, resume, stop, checkpoint now.
// The steering thread's calls return at once; the trainer reads the requests after every step and, while
// the run is paused, holds there (train/trainer.cpp: the run shows as paused in its run store, with its
// heartbeat kept fresh so no one marks it stale).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace ls::train {

class RunControl {
 public:
  // on_paused, if set, is told on the training thread when the run starts and stops holding.
  explicit RunControl(std::function<void(bool paused)> on_paused = {}) : on_paused_(std::move(on_paused)) {}
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  // The steering side.
  void pause();
  void resume();
  void stop();
  void checkpoint_now();
  void reset();  // before a new run: nothing asked

  // The trainer's side, after a step.
  bool stop_requested() const;
  bool take_checkpoint_request();  // true once per request
  // While paused and not stopped: calls held(), then keep_alive() every `interval` until resumed or
  // stopped, then released(); on_paused(true) follows held() and on_paused(false) follows released().
  // Returns at once, calling nothing, when the run is not paused.
  struct Hold {
    std::function<void()> held, keep_alive, released;
  };
  void hold_while_paused(const Hold& hold);
  std::chrono::milliseconds interval{std::chrono::seconds(5)};

 private:
  bool holding() const { return paused_ && !stop_; }  // mutex_ held

  std::function<void(bool)> on_paused_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false, stop_ = false, checkpoint_ = false;  // guarded by mutex_
};

}  // namespace ls::train
