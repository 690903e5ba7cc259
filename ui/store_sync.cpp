#include "ui/store_sync.h"

#include <algorithm>

#include "ui/settings.h"

namespace ls::ui {

namespace {

constexpr double kStaleAfterS = 300;  // a running run without a heartbeat for this long was interrupted
constexpr size_t kRunsListed = 200;

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
    auto rows = db_->metrics_changed(r.id, polled_rev_[r.id]);
    if (resumed || !rows.empty()) {
      for (const auto& m : rows) polled_rev_[r.id] = std::max(polled_rev_[r.id], m.rev);
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
      events_.push(ev::RunMetrics{r.id, std::move(rows), resumed});
      events_.push(ev::RunCheckpoints{r.id, db_->checkpoints(r.id)});
    }
  }
  events_.push(ev::RunsListed{std::move(runs)});
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
