#pragma once
// The channel from worker threads to the UI thread (docs/design.md "Threads and queues"): workers push
// events whenever they like; the UI drains everything once per frame. Neither side waits for the other
// longer than a push or a swap of two deques.
#include <deque>
#include <mutex>
#include <utility>

namespace ls::ui {

template <class Event>
class EventQueue {
 public:
  void push(Event e) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(e));
  }
  // Everything pushed so far, oldest first.
  std::deque<Event> drain() {
    std::deque<Event> out;
    std::lock_guard lock(mutex_);
    out.swap(events_);
    return out;
  }

 private:
  std::mutex mutex_;
  std::deque<Event> events_;
};

}  // namespace ls::ui
