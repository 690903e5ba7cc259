#include "ui/worker.h"

#include <exception>

namespace ls::ui {

Worker::Worker(std::function<void(const std::string&)> on_error, std::chrono::milliseconds period, Job on_idle)
    : on_error_(std::move(on_error)), period_(period), on_idle_(std::move(on_idle)), thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  thread_.join();
}

void Worker::post(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_all();
}

bool Worker::busy() const {
  std::lock_guard lock(mutex_);
  return running_job_ || !jobs_.empty();
}

void Worker::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (period_.count() > 0)
      wake_.wait_for(lock, period_, [&] { return quit_ || !jobs_.empty(); });
    else
      wake_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
    if (quit_) return;
    Job job;
    if (!jobs_.empty()) {
      job = std::move(jobs_.front());
      jobs_.pop_front();
    } else {
      job = on_idle_;
    }
    if (!job) continue;
    running_job_ = true;
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {
      on_error_(e.what());
    } catch (...) {
      on_error_("unknown error");
    }
    lock.lock();
    running_job_ = false;
  }
}

}  // namespace ls::ui
