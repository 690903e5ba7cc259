#include "store/run_store.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "error.h"
#include "store/schema.h"

namespace ls::store {
namespace {

constexpr int kBusyTimeoutMs = 5000;

constexpr std::array<std::pair<RunStatus, const char*>, 6> kRunStatusNames = {{
    {RunStatus::created, "created"},
    {RunStatus::running, "running"},
    {RunStatus::paused, "paused"},
    {RunStatus::finished, "finished"},
    {RunStatus::failed, "failed"},
    {RunStatus::stopped, "stopped"},
}};

constexpr std::array<std::pair<ExportFormat, const char*>, 3> kExportFormatNames = {{
    {ExportFormat::peft, "peft"},
    {ExportFormat::merged, "merged"},
    {ExportFormat::gguf, "gguf"},
}};

std::string run_label(int64_t run) { return "run " + std::to_string(run); }

// Creates the folder, opens the file, checks it is ours (before changing anything in it), sets the
// connection up. Pragmas that report a value are stepped
// through Query; the journal mode must come back as "wal" (it does not on filesystems without shared
// memory, where live reading would block).
Database open_database(const std::filesystem::path& path) {
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw Error(path.string() + ": cannot create its folder (" + ec.message() + ")");
  }
  Database db(path, kBusyTimeoutMs);
  check_schema(db);
  db.exec("PRAGMA foreign_keys = ON", "opening the run store");
  {
    auto q = db.query("PRAGMA journal_mode = WAL", "opening the run store");
    if (!q.step() || q.text(0) != "wal")
      throw Error(path.string() + ": cannot switch the run store to WAL mode (journal mode is \"" +
                  q.text(0) + "\")");
  }
  // In WAL mode NORMAL never corrupts the file; a power cut may lose the latest commits, a crash does not.
  db.exec("PRAGMA synchronous = NORMAL", "opening the run store");
  return db;
}

std::string gpu_ms_to_json(const std::vector<GpuTime>& gpu_ms) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const GpuTime& t : gpu_ms) j[t.group] = t.ms;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::vector<GpuTime> gpu_ms_from_json(const std::string& text, const std::filesystem::path& path, int64_t run,
                                      int64_t step) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(path.string() + ": " + run_label(run) + ": step " + std::to_string(step) + ": gpu_ms_json " + why);
  };
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw fail("is not a JSON object");
  std::vector<GpuTime> out;
  for (const auto& [group, ms] : j.items()) {
    if (!ms.is_number() && !ms.is_null()) throw fail("\"" + group + "\" is not a number");
    // nlohmann writes a non-finite double as null
    out.push_back({group, ms.is_null() ? std::numeric_limits<double>::quiet_NaN() : ms.get<double>()});
  }
  return out;
}

}  // namespace

namespace {

// A value's name in a table of (value, name) pairs, and back.
template <typename E, size_t N>
const char* name_in(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}
template <typename E, size_t N>
std::optional<E> value_in(const std::array<std::pair<E, const char*>, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

// Runs an INSERT ... RETURNING of one integer column and gives that value (the new row's id or index).
int64_t returned_int64(Query& q) {
  q.step();
  const int64_t value = q.int64(0);
  q.run();
  return value;
}

}  // namespace

const char* run_status_name(RunStatus s) { return name_in(kRunStatusNames, s); }
std::optional<RunStatus> parse_run_status(std::string_view text) { return value_in(kRunStatusNames, text); }
const char* export_format_name(ExportFormat f) { return name_in(kExportFormatNames, f); }
std::optional<ExportFormat> parse_export_format(std::string_view text) { return value_in(kExportFormatNames, text); }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::filesystem::path path_or_default(const std::filesystem::path& path) {
  return path.empty() ? default_store_path() : path;
}

std::filesystem::path default_store_path() {
  // The XDG base directory spec: a relative XDG_DATA_HOME is invalid and must be ignored.
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && std::filesystem::path(xdg).is_absolute()) return std::filesystem::path(xdg) / "lorastudio" / "runs.sqlite";
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw Error("run store: neither XDG_DATA_HOME (absolute) nor HOME is set; pass the store's path");
  return std::filesystem::path(home) / ".local" / "share" / "lorastudio" / "runs.sqlite";
}

RunStore::RunStore(const std::filesystem::path& path) : db_(open_database(path)) { migrate(db_); }

// [runs] -------------------------------------------------------------------------------------------------

namespace {
constexpr const char* kRunColumns =
    "id, name, created_at, started_at, finished_at, status, model_path, data_path, config_json, error, out_dir, "
    "writer_pid, heartbeat_at, "
    // run_events_by_run is read in (run_id, id) order, so the messages come oldest first.
    "(SELECT group_concat(message, char(10)) FROM run_events WHERE run_events.run_id = runs.id)";
}

RunInfo RunStore::read_run(const Query& q) const {
  RunInfo r;
  r.id = q.int64(0);
  r.name = q.text(1);
  r.created_at = q.real(2);
  r.started_at = q.optional_real(3);
  r.finished_at = q.optional_real(4);
  const std::string status = q.text(5);
  const auto parsed = parse_run_status(status);
  if (!parsed) throw Error(path().string() + ": " + run_label(r.id) + ": unknown status \"" + status + "\"");
  r.status = *parsed;
  r.model_path = q.text(6);
  r.data_path = q.text(7);
  r.config_json = q.text(8);
  r.error = q.text(9);
  r.out_dir = q.text(10);
  r.writer_pid = q.optional_int64(11);
  r.heartbeat_at = q.optional_real(12);
  r.notes = q.optional_text(13).value_or("");
  return r;
}

void RunStore::check_run_exists(int64_t run, std::string_view doing) const {
  auto q = db_.query("SELECT 1 FROM runs WHERE id = ?1", doing);
  if (!q.bind(1, run).step()) throw Error(path().string() + ": " + run_label(run) + ": no such run");
}

int64_t RunStore::create_run(const NewRun& run) {
  auto q = db_.query(
      "INSERT INTO runs (name, created_at, status, model_path, data_path, config_json, out_dir) "
      "VALUES (?1, ?2, 'created', ?3, ?4, ?5, ?6) RETURNING id",
      "creating a run");
  q.bind(1, run.name)
      .bind(2, unix_now())
      .bind(3, run.model_path.string())
      .bind(4, run.data_path.string())
      .bind(5, run.config_json)
      .bind(6, run.out_dir.string());
  const int64_t id = returned_int64(q);
  return id;
}

void RunStore::set_status(int64_t run, RunStatus status, std::string_view error) {
  const std::string doing = run_label(run) + ": setting status " + run_status_name(status);
  const double now = unix_now();
  switch (status) {
    case RunStatus::running:
      db_.query(
             "UPDATE runs SET status = 'running', started_at = COALESCE(started_at, ?2), heartbeat_at = ?2, "
             "writer_pid = ?3, finished_at = NULL, error = NULL WHERE id = ?1",
             doing)
          .bind(1, run)
          .bind(2, now)
          .bind(3, int64_t(::getpid()))
          .run();
      break;
    case RunStatus::created:
    case RunStatus::paused:
      db_.query("UPDATE runs SET status = ?2 WHERE id = ?1", doing)
          .bind(1, run)
          .bind(2, run_status_name(status))
          .run();
      break;
    case RunStatus::finished:
    case RunStatus::failed:
    case RunStatus::stopped: {
      auto q = db_.query("UPDATE runs SET status = ?2, finished_at = ?3, error = ?4 WHERE id = ?1", doing);
      q.bind(1, run).bind(2, run_status_name(status)).bind(3, now);
      if (error.empty())
        q.bind(4, nullptr);
      else
        q.bind(4, error);
      q.run();
      break;
    }
  }
  if (db_.changes() != 1) throw Error(path().string() + ": " + run_label(run) + ": no such run");
}

bool RunStore::update_heartbeat(int64_t run, double now) {
  db_.query("UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1 AND status IN ('running', 'paused')",
            run_label(run) + ": updating the heartbeat")
      .bind(1, run)
      .bind(2, now)
      .run();
  return db_.changes() == 1;
}

std::vector<int64_t> RunStore::mark_stale_runs(double now, double timeout_s) {
  auto q = db_.query(
      "UPDATE runs SET status = 'failed', error = 'interrupted', finished_at = heartbeat_at "
      "WHERE status IN ('running', 'paused') AND (heartbeat_at IS NULL OR heartbeat_at < ?1) RETURNING id",
      "marking stale runs");
  q.bind(1, now - timeout_s);
  std::vector<int64_t> ids;
  while (q.step()) ids.push_back(q.int64(0));
  std::sort(ids.begin(), ids.end());  // (RETURNING gives no order)
  return ids;
}

std::vector<RunInfo> RunStore::list_runs() const {
  static const std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY created_at DESC, id DESC";
  auto q = db_.query(sql.c_str(), "listing runs");
  std::vector<RunInfo> runs;
  while (q.step()) runs.push_back(read_run(q));
  return runs;
}

std::optional<RunInfo> RunStore::find_run(int64_t run) const {
  static const std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1";
  auto q = db_.query(sql.c_str(), run_label(run) + ": reading");
  if (!q.bind(1, run).step()) return std::nullopt;
  return read_run(q);
}

RunInfo RunStore::run(int64_t run) const {
  auto r = find_run(run);
  if (!r) throw Error(path().string() + ": " + run_label(run) + ": no such run");
  return std::move(*r);
}

// [metrics] ----------------------------------------------------------------------------------------------

namespace {
constexpr const char* kMetricColumns = "step, time, loss, val_loss, lr, grad_norm, tokens_per_s, gpu_ms_json, rev";
}

MetricRow RunStore::read_metric(const Query& q, int64_t run) const {
  MetricRow m;
  m.step = q.int64(0);
  m.time = q.real(1);
  m.loss = q.real(2);
  m.val_loss = q.optional_real(3);
  m.lr = q.real(4);
  m.grad_norm = q.real(5);
  m.tokens_per_s = q.real(6);
  if (auto gpu = q.optional_text(7)) m.gpu_ms = gpu_ms_from_json(*gpu, path(), run, m.step);
  m.rev = q.int64(8);
  return m;
}

void RunStore::log_metrics(int64_t run, const MetricRow& row) { log_metrics(run, std::span(&row, 1)); }

void RunStore::log_metrics(int64_t run, std::span<const MetricRow> rows) {
  const std::string doing = run_label(run) + ": logging metrics";
  Transaction tx(db_, doing);
  check_run_exists(run, doing);  // a clearer message than the foreign key's
  for (const MetricRow& m : rows) {
    if (m.step < 0) throw Error(path().string() + ": " + doing + ": step " + std::to_string(m.step) + " is negative");
    auto q = db_.query(
        "INSERT INTO metrics (run_id, step, rev, time, loss, val_loss, lr, grad_norm, tokens_per_s, gpu_ms_json) "
        "VALUES (?1, ?2, (SELECT IFNULL(MAX(rev), 0) + 1 FROM metrics WHERE run_id = ?1), ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
        "ON CONFLICT (run_id, step) DO UPDATE SET rev = excluded.rev, time = excluded.time, loss = excluded.loss, "
        "val_loss = COALESCE(excluded.val_loss, val_loss), lr = excluded.lr, grad_norm = excluded.grad_norm, "
        "tokens_per_s = excluded.tokens_per_s, gpu_ms_json = COALESCE(excluded.gpu_ms_json, gpu_ms_json)",
        doing);
    q.bind(1, run).bind(2, m.step).bind(3, m.time).bind(4, m.loss).bind(5, m.val_loss);
    q.bind(6, m.lr).bind(7, m.grad_norm).bind(8, m.tokens_per_s);
    if (m.gpu_ms.empty())
      q.bind(9, nullptr);
    else
      q.bind(9, gpu_ms_to_json(m.gpu_ms));
    q.run();
  }
  tx.commit();
}

std::vector<MetricRow> RunStore::metrics(int64_t run, int64_t after_step) const {
  static const std::string sql =
      std::string("SELECT ") + kMetricColumns + " FROM metrics WHERE run_id = ?1 AND step > ?2 ORDER BY step";
  auto q = db_.query(sql.c_str(), run_label(run) + ": reading metrics");
  q.bind(1, run).bind(2, after_step);
  std::vector<MetricRow> rows;
  while (q.step()) rows.push_back(read_metric(q, run));
  return rows;
}

std::vector<MetricRow> RunStore::metrics_changed(int64_t run, int64_t after_rev) const {
  static const std::string sql =
      std::string("SELECT ") + kMetricColumns + " FROM metrics WHERE run_id = ?1 AND rev > ?2 ORDER BY rev";
  auto q = db_.query(sql.c_str(), run_label(run) + ": reading metrics");
  q.bind(1, run).bind(2, after_rev);
  std::vector<MetricRow> rows;
  while (q.step()) rows.push_back(read_metric(q, run));
  return rows;
}

int64_t RunStore::delete_metrics_after(int64_t run, int64_t step) {
  db_.query("DELETE FROM metrics WHERE run_id = ?1 AND step > ?2", run_label(run) + ": deleting metrics")
      .bind(1, run)
      .bind(2, step)
      .run();
  return db_.changes();
}

void RunStore::copy_metrics(int64_t from, int64_t to, int64_t through_step) {
  const std::string doing = run_label(to) + ": copying metrics of " + run_label(from);
  Transaction tx(db_, doing);
  check_run_exists(from, doing);
  check_run_exists(to, doing);
  db_.query(
         "INSERT OR REPLACE INTO metrics (run_id, step, rev, time, loss, val_loss, lr, grad_norm, tokens_per_s, "
         "gpu_ms_json) SELECT ?2, step, rev, time, loss, val_loss, lr, grad_norm, tokens_per_s, gpu_ms_json "
         "FROM metrics WHERE run_id = ?1 AND step <= ?3",
         doing)
      .bind(1, from)
      .bind(2, to)
      .bind(3, through_step)
      .run();
  tx.commit();
}

// [events] -----------------------------------------------------------------------------------------------

namespace {

// One row of run_events, now, inside the caller's transaction (the run checked); gives its id.
int64_t insert_event(Database& db, int64_t run, std::string_view kind, std::optional<int64_t> step,
                     std::string_view message, const std::string& doing) {
  auto q = db.query("INSERT INTO run_events (run_id, time, kind, step, message) VALUES (?1, ?2, ?3, ?4, ?5) "
                    "RETURNING id",
                    doing);
  q.bind(1, run).bind(2, unix_now()).bind(3, kind).bind(4, step).bind(5, message);
  return returned_int64(q);
}

}  // namespace

int64_t RunStore::add_event(int64_t run, std::string_view kind, std::optional<int64_t> step,
                            std::string_view message) {
  const std::string doing = run_label(run) + ": adding an event";
  Transaction tx(db_, doing);
  check_run_exists(run, doing);
  const int64_t id = insert_event(db_, run, kind, step, message, doing);
  tx.commit();
  return id;
}

std::vector<RunEvent> RunStore::events(int64_t run) const {
  auto q = db_.query("SELECT id, time, kind, step, message FROM run_events WHERE run_id = ?1 ORDER BY id",
                     run_label(run) + ": reading events");
  q.bind(1, run);
  std::vector<RunEvent> out;
  while (q.step())
    out.push_back({.id = q.int64(0), .run_id = run, .time = q.real(1), .kind = q.text(2), .step = q.optional_int64(3),
                   .message = q.text(4)});
  return out;
}

void RunStore::resume_run(int64_t run, int64_t step, std::string_view message) {
  const std::string doing = run_label(run) + ": resuming at step " + std::to_string(step);
  Transaction tx(db_, doing);
  check_run_exists(run, doing);
  delete_metrics_after(run, step);
  insert_event(db_, run, kEventResumed, step, message, doing);
  tx.commit();
}

// [checkpoints] ------------------------------------------------------------------------------------------

void RunStore::add_checkpoint(int64_t run, int64_t step, const std::filesystem::path& file) {
  const std::string doing = run_label(run) + ": step " + std::to_string(step) + ": adding a checkpoint";
  Transaction tx(db_, doing);
  check_run_exists(run, doing);
  db_.query(
         "INSERT INTO checkpoints (run_id, step, path, created_at) VALUES (?1, ?2, ?3, ?4) "
         "ON CONFLICT (run_id, step) DO UPDATE SET path = excluded.path, created_at = excluded.created_at",
         doing)
      .bind(1, run)
      .bind(2, step)
      .bind(3, file.string())
      .bind(4, unix_now())
      .run();
  tx.commit();
}

std::vector<Checkpoint> RunStore::checkpoints(int64_t run) const {
  auto q = db_.query("SELECT step, path, created_at FROM checkpoints WHERE run_id = ?1 ORDER BY step",
                     run_label(run) + ": reading checkpoints");
  q.bind(1, run);
  std::vector<Checkpoint> out;
  while (q.step()) out.push_back({.run_id = run, .step = q.int64(0), .path = q.text(1), .created_at = q.real(2)});
  return out;
}

std::optional<Checkpoint> RunStore::latest_checkpoint(int64_t run) const {
  auto q = db_.query("SELECT step, path, created_at FROM checkpoints WHERE run_id = ?1 ORDER BY step DESC LIMIT 1",
                     run_label(run) + ": reading checkpoints");
  if (!q.bind(1, run).step()) return std::nullopt;
  return Checkpoint{.run_id = run, .step = q.int64(0), .path = q.text(1), .created_at = q.real(2)};
}

// [exports] ----------------------------------------------------------------------------------------------

int64_t RunStore::add_export(int64_t run, const std::filesystem::path& file, ExportFormat format) {
  const std::string doing = run_label(run) + ": adding an export";
  Transaction tx(db_, doing);
  check_run_exists(run, doing);
  auto q = db_.query("INSERT INTO exports (run_id, path, format, created_at) VALUES (?1, ?2, ?3, ?4) RETURNING id",
                     doing);
  q.bind(1, run).bind(2, file.string()).bind(3, export_format_name(format)).bind(4, unix_now());
  const int64_t id = returned_int64(q);
  tx.commit();
  return id;
}

std::vector<ExportInfo> RunStore::exports(int64_t run) const {
  auto q = db_.query("SELECT id, path, format, created_at FROM exports WHERE run_id = ?1 ORDER BY created_at, id",
                     run_label(run) + ": reading exports");
  q.bind(1, run);
  std::vector<ExportInfo> out;
  while (q.step()) {
    const std::string format = q.text(2);
    const auto parsed = parse_export_format(format);
    if (!parsed)
      throw Error(path().string() + ": " + run_label(run) + ": export " + std::to_string(q.int64(0)) +
                  ": unknown format \"" + format + "\"");
    out.push_back(
        {.id = q.int64(0), .run_id = run, .path = q.text(1), .format = *parsed, .created_at = q.real(3)});
  }
  return out;
}

// [chats] ------------------------------------------------------------------------------------------------

namespace {
std::string chat_label(int64_t chat) { return "chat " + std::to_string(chat); }

ChatInfo read_chat(const Query& q) {
  ChatInfo c;
  c.id = q.int64(0);
  c.run_id = q.optional_int64(1);
  if (auto adapter = q.optional_text(2)) c.adapter_path = *adapter;
  c.created_at = q.real(3);
  c.title = q.text(4);
  return c;
}
}  // namespace

int64_t RunStore::create_chat(const NewChat& chat) {
  const std::string doing = "creating a chat";
  Transaction tx(db_, doing);
  if (chat.run_id) check_run_exists(*chat.run_id, doing);
  auto q = db_.query("INSERT INTO chats (run_id, adapter_path, created_at, title) VALUES (?1, ?2, ?3, ?4) RETURNING id",
                     doing);
  q.bind(1, chat.run_id).bind(3, unix_now()).bind(4, chat.title);
  if (chat.adapter_path) q.bind(2, chat.adapter_path->string());
  const int64_t id = returned_int64(q);
  tx.commit();
  return id;
}

int64_t RunStore::add_chat_message(int64_t chat, const ChatMessage& message) {
  const std::string doing = chat_label(chat) + ": adding a message";
  Transaction tx(db_, doing);
  if (!db_.query("SELECT 1 FROM chats WHERE id = ?1", doing).bind(1, chat).step())
    throw Error(path().string() + ": " + chat_label(chat) + ": no such chat");
  auto q = db_.query(
      "INSERT INTO chat_messages (chat_id, idx, role, content) "
      "VALUES (?1, (SELECT IFNULL(MAX(idx), -1) + 1 FROM chat_messages WHERE chat_id = ?1), ?2, ?3) RETURNING idx",
      doing);
  q.bind(1, chat).bind(2, message.role).bind(3, message.content);
  const int64_t idx = returned_int64(q);
  tx.commit();
  return idx;
}

std::vector<ChatMessage> RunStore::chat_messages(int64_t chat) const {
  auto q = db_.query("SELECT role, content FROM chat_messages WHERE chat_id = ?1 ORDER BY idx",
                     chat_label(chat) + ": reading messages");
  q.bind(1, chat);
  std::vector<ChatMessage> out;
  while (q.step()) out.push_back({q.text(0), q.text(1)});
  return out;
}

std::vector<ChatInfo> RunStore::list_chats() const {
  auto q = db_.query("SELECT id, run_id, adapter_path, created_at, title FROM chats ORDER BY created_at DESC, id DESC",
                     "listing chats");
  std::vector<ChatInfo> out;
  while (q.step()) out.push_back(read_chat(q));
  return out;
}

// [settings] ---------------------------------------------------------------------------------------------

std::optional<std::string> RunStore::setting(std::string_view key) const {
  auto q = db_.query("SELECT value FROM settings WHERE key = ?1", "reading setting \"" + std::string(key) + "\"");
  if (!q.bind(1, key).step()) return std::nullopt;
  return q.text(0);
}

void RunStore::set_setting(std::string_view key, std::string_view value) {
  db_.query("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            "writing setting \"" + std::string(key) + "\"")
      .bind(1, key)
      .bind(2, value)
      .run();
}

}  // namespace ls::store
