#include "train/run_control.h"

#include <utility>

namespace ls::train {

void RunControl::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void RunControl::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
}

void RunControl::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
}

void RunControl::checkpoint_now() {
  std::lock_guard lock(mutex_);
  checkpoint_ = true;
}

void RunControl::reset() {
  std::lock_guard lock(mutex_);
  paused_ = stop_ = checkpoint_ = false;
}

bool RunControl::stop_requested() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

bool RunControl::take_checkpoint_request() {
  std::lock_guard lock(mutex_);
  return std::exchange(checkpoint_, false);
}

// mutex_ is never held across the hooks (the run store's I/O), so the steering calls return at once.
void RunControl::hold_while_paused(const Hold& hold) {
  {
    std::lock_guard lock(mutex_);
    if (!holding()) return;
  }
  if (hold.held) hold.held();
  if (on_paused_) on_paused_(true);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, interval, [&] { return !holding(); });
      if (!holding()) break;
    }
    if (hold.keep_alive) hold.keep_alive();
  }
  if (hold.released) hold.released();
  if (on_paused_) on_paused_(false);
}

}  // namespace ls::train
