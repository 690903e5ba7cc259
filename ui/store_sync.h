#pragma once
// The UI's side of the run store. The store thread owns a StoreSync: it polls the store for runs and their
// new metrics and checkpoints (also of runs of other processes) and tells the UI thread through events,
// and it writes the chats, exports and settings the UI hands it. The UI thread merges what it is told
// into RunsView (merge_metrics).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/run_store.h"
#include "ui/events.h"
#include "ui/views.h"

namespace ls::ui {

class StoreSync {
 public:
  explicit StoreSync(Events& events) : events_(events) {}

  // On the UI thread before the store thread starts: opens the store, marks interrupted runs, and returns
  // the saved UI settings. Throws if the store cannot be opened; the methods below then do nothing.
  std::optional<std::string> open(const std::filesystem::path& path);

  // On the store thread (or on the UI thread once the store thread is gone).
  void poll();  // runs, metrics, checkpoints -> ev::RunsListed, ev::RunMetrics, ev::RunCheckpoints
                // (a resumed run's metrics all again, with replace set); the chats -> ev::ChatsListed when
                // they changed
  void save_settings(const std::string& json);
  // The chat's messages go to one stored chat, made with its first message; new_chat starts another.
  void add_user_message(const std::string& text, std::optional<std::filesystem::path> adapter,
                        std::optional<int64_t> run);
  void add_reply(const std::string& role, const std::string& text);
  void new_chat() { chat_id_ = 0; }
  // A stored chat shown again (-> ev::ChatOpened); the next messages are added to it. Unknown id: nothing.
  void open_chat(int64_t id);
  void add_export(int64_t run, const std::filesystem::path& dir, store::ExportFormat format);

 private:
  Events& events_;
  std::optional<store::RunStore> db_;
  int64_t chat_id_ = 0;
  std::map<int64_t, int64_t> polled_rev_;  // per run, the newest metrics revision read
  std::map<int64_t, std::string> polled_notes_;  // a change (a resume) means: read the run's metrics again
  std::map<int64_t, store::RunStatus> polled_status_;  // a change means: read the run's checkpoints again
  std::chrono::steady_clock::time_point last_stale_check_{};
  std::vector<std::pair<int64_t, std::string>> listed_chats_;  // what ev::ChatsListed last said: id, title
};

// On the UI thread: polled or reported rows into the run's metrics, by step (a row keeps the validation
// loss and GPU times an earlier report of its step had).
void merge_metrics(RunsView& runs, int64_t run, std::vector<store::MetricRow> rows);

}  // namespace ls::ui
