#include "ui/store_sync.h"

#include <algorithm>

#include "train/checkpoint.h"
#include "ui/settings.h"

namespace ls::ui {

namespace {

constexpr double kStaleAfterS = 300;  // a running run without a heartbeat for this long was interrupted
constexpr size_t kRunsListed = 200;
constexpr size_t kChatsListed = 50;

// The run's checkpoints as its store records them. A process killed between renaming a checkpoint folder
// into place and recording it leaves a complete checkpoint the store does not list: for a run that ended
// early, its folder's latest complete checkpoint counts too, so Resume is offered.
std::vector<store::Checkpoint> run_checkpoints(const store::RunStore& db, const store::RunInfo& r) {
  auto recorded = db.checkpoints(r.id);
  if (!recorded.empty() || (r.status != store::RunStatus::failed && r.status != store::RunStatus::stopped))
    return recorded;
  if (const auto found = train::latest_checkpoint_in(r.out_dir)) {
    try {
      recorded.push_back({.run_id = r.id, .step = train::read_checkpoint_state(*found).step, .path = *found});
    } catch (const std::exception&) {
      // not readable: no checkpoint to offer
    }
  }
  return recorded;
}

}  // namespace

std::optional<std::string> StoreSync::open(const std::filesystem::path& path) {
  try {
    db_.emplace(path);
    db_->mark_stale_runs(store::unix_now(), kStaleAfterS);
    return db_->setting(kSettingsKey);
  } catch (...) {
    db_.reset();
    throw;
  }
}

void StoreSync::poll() {
  if (!db_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_stale_check_ > std::chrono::seconds(30)) {
    last_stale_check_ = now;
    db_->mark_stale_runs(store::unix_now(), kStaleAfterS);
  }
  auto runs = db_->list_runs();
  if (runs.size() > kRunsListed) runs.resize(kRunsListed);
  for (const auto& r : runs) {
    // A resume deleted the steps past its checkpoint, which polling by rev cannot see: read them all again.
    auto notes = polled_notes_.find(r.id);
    const bool resumed = notes != polled_notes_.end() && notes->second != r.notes;
    if (resumed) polled_rev_[r.id] = 0;
    polled_notes_[r.id] = r.notes;
    // A run marked interrupted by the sweep writes no new step: its status change is what says to look again.
    auto status = polled_status_.find(r.id);
    const bool status_changed = status == polled_status_.end() || status->second != r.status;
    polled_status_[r.id] = r.status;
    auto rows = db_->metrics_changed(r.id, polled_rev_[r.id]);
    const bool new_rows = !rows.empty();
    if (resumed || new_rows) {
      for (const auto& m : rows) polled_rev_[r.id] = std::max(polled_rev_[r.id], m.rev);
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
      events_.push(ev::RunMetrics{r.id, std::move(rows), resumed});
    }
    if (resumed || status_changed || new_rows) events_.push(ev::RunCheckpoints{r.id, run_checkpoints(*db_, r)});
  }
  events_.push(ev::RunsListed{std::move(runs)});

  auto chats = db_->list_chats();
  if (chats.size() > kChatsListed) chats.resize(kChatsListed);
  std::vector<std::pair<int64_t, std::string>> listed;
  for (const auto& c : chats) listed.emplace_back(c.id, c.title);
  if (listed != listed_chats_) {
    listed_chats_ = std::move(listed);
    events_.push(ev::ChatsListed{std::move(chats)});
  }
}

void StoreSync::open_chat(int64_t id) {
  if (!db_) return;
  for (auto& c : db_->list_chats())
    if (c.id == id) {
      chat_id_ = id;
      events_.push(ev::ChatOpened{std::move(c), db_->chat_messages(id)});
      return;
    }
}

void StoreSync::save_settings(const std::string& json) {
  if (db_) db_->set_setting(kSettingsKey, json);
}

void StoreSync::add_user_message(const std::string& text, std::optional<std::filesystem::path> adapter,
                                 std::optional<int64_t> run) {
  if (!db_) return;
  if (!chat_id_) chat_id_ = db_->create_chat({.run_id = run, .adapter_path = adapter, .title = text.substr(0, 80)});
  db_->add_chat_message(chat_id_, {"user", text});
}

void StoreSync::add_reply(const std::string& role, const std::string& text) {
  if (db_ && chat_id_) db_->add_chat_message(chat_id_, {role, text});
}

void StoreSync::add_export(int64_t run, const std::filesystem::path& dir, store::ExportFormat format) {
  if (db_) db_->add_export(run, dir, format);
}

void merge_metrics(RunsView& runs, int64_t run, std::vector<store::MetricRow> rows) {
  auto& have = runs.metrics[run];
  for (auto& r : rows) {
    auto it = std::lower_bound(have.begin(), have.end(), r.step, [](const store::MetricRow& a, int64_t s) { return a.step < s; });
    if (it != have.end() && it->step == r.step) {
      if (!r.val_loss) r.val_loss = it->val_loss;
      if (r.gpu_ms.empty()) r.gpu_ms = it->gpu_ms;
      *it = std::move(r);
    } else {
      have.insert(it, std::move(r));
    }
  }
}

}  // namespace ls::ui
