#pragma once
// A thread that runs jobs one after another (loading a model, reading a data set, talking to the run
// store, generating a reply). Jobs catch their own errors and report them as events; one that throws
// anyway is handed to on_error. Optionally runs `on_idle` every `period` while no job is queued.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ls::ui {

class Worker {
 public:
  using Job = std::function<void()>;
  explicit Worker(std::function<void(const std::string&)> on_error, std::chrono::milliseconds period = {},
                  Job on_idle = {});
  ~Worker();  // drops queued jobs, lets the running one finish, joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void post(Job job);
  // A job is queued or running.
  bool busy() const;

 private:
  void loop();

  std::function<void(const std::string&)> on_error_;
  std::chrono::milliseconds period_;
  Job on_idle_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool running_job_ = false, quit_ = false;
  std::thread thread_;
};

}  // namespace ls::ui
