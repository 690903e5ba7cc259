#pragma once
// The run store: one SQLite file holding runs, their metrics, checkpoints and exports, chats and settings.
// The headless trainer writes it while the GUI reads the same file live, each through its own RunStore:
// the file is in WAL mode, so readers see every committed write, never a half of one, and neither side
// blocks the other for longer than one short transaction (writers wait for each other up to 5 s).
//
// Times are seconds since the Unix epoch as double (ImPlot's time axis takes them as they are). Every
// write is one short transaction. Failures (a file that is not a database or is corrupt, one written by a
// newer lorastudio, a missing run, a lock held too long) throw ls::Error naming the file.
//
// Crash safety: a trainer records its pid and refreshes heartbeat_at (update_heartbeat) while a run is
// running or paused; mark_stale_runs() turns runs whose heartbeat stopped into failed/"interrupted".
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/sqlite.h"

namespace ls::store {

enum class RunStatus { created, running, paused, finished, failed, stopped };
const char* run_status_name(RunStatus s);                     // "created", "running", ...
std::optional<RunStatus> parse_run_status(std::string_view);  // nullopt for an unknown name

enum class ExportFormat { peft, merged, gguf };
const char* export_format_name(ExportFormat f);  // "peft", "merged", "gguf"
std::optional<ExportFormat> parse_export_format(std::string_view);

// Now, in seconds since the Unix epoch (system clock).
double unix_now();

// $XDG_DATA_HOME/lorastudio/runs.sqlite when XDG_DATA_HOME is set to an absolute path, else
// $HOME/.local/share/lorastudio/runs.sqlite. Throws ls::Error when neither variable is usable.
std::filesystem::path default_store_path();
// `path`, or where it is empty default_store_path(): the store the app, --batch and the commands share.
std::filesystem::path path_or_default(const std::filesystem::path& path);

// What the trainer knows when it creates a run.
struct NewRun {
  std::string name;
  std::filesystem::path model_path;  // the base model folder
  std::filesystem::path data_path;   // the training data
  std::string config_json;           // the resolved run config
  std::filesystem::path out_dir;     // adapters, checkpoints
};

struct RunInfo {
  int64_t id = 0;
  std::string name;
  double created_at = 0;
  std::optional<double> started_at;   // the first time it went running
  std::optional<double> finished_at;  // when it became finished, failed or stopped
  RunStatus status = RunStatus::created;
  std::filesystem::path model_path, data_path;
  std::string config_json;
  std::string error;  // why it failed ("interrupted" when its writer died); empty otherwise
  std::filesystem::path out_dir;
  std::optional<int64_t> writer_pid;    // the process that last set it running
  std::optional<double> heartbeat_at;  // that process's latest sign of life
  std::string notes;  // its events' messages, oldest first, one a line (e.g. "resumed at step 40 from ..."); read only
};

// Something that happened to a run besides its steps.
struct RunEvent {
  int64_t id = 0;
  int64_t run_id = 0;
  double time = 0;
  std::string kind;             // e.g. kEventResumed
  std::optional<int64_t> step;  // the step it happened at, if any
  std::string message;          // for people
};
inline constexpr const char* kEventResumed = "resumed";
inline constexpr const char* kEventSkipped = "skipped";  // a step whose update was dropped (--on-nonfinite skip)

// GPU time of one op group in one step.
struct GpuTime {
  std::string group;  // e.g. "attention", "matmul", "optimizer"
  double ms = 0;
  bool operator==(const GpuTime&) const = default;
};

// One training step. A NaN in loss, lr, grad_norm or tokens_per_s is stored as NULL and read back as NaN
// (SQLite has no NaN), so a diverged loss survives the round trip.
struct MetricRow {
  int64_t step = 0;  // >= 0
  double time = 0;   // when the step finished
  double loss = 0;   // training loss of the step
  std::optional<double> val_loss;  // absent until an evaluation ran at this step
  double lr = 0;
  double grad_norm = 0;  // before clipping
  double tokens_per_s = 0;
  std::vector<GpuTime> gpu_ms;  // in the trainer's order; empty when not profiled (stored as NULL)
  // Read only: the run's write counter when the row was last written (see metrics_changed). Ignored on
  // writes.
  int64_t rev = 0;
};

struct Checkpoint {
  int64_t run_id = 0;
  int64_t step = 0;
  std::filesystem::path path;
  double created_at = 0;
};

struct ExportInfo {
  int64_t id = 0;
  int64_t run_id = 0;
  std::filesystem::path path;
  ExportFormat format = ExportFormat::peft;
  double created_at = 0;
};

struct NewChat {
  std::optional<int64_t> run_id;                     // the run whose adapter it talks to, if any
  std::optional<std::filesystem::path> adapter_path;  // the adapter loaded, if any
  std::string title;
};

struct ChatInfo {
  int64_t id = 0;
  std::optional<int64_t> run_id;  // cleared when the run is deleted
  std::optional<std::filesystem::path> adapter_path;
  double created_at = 0;
  std::string title;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ... as the chat template names them
  std::string content;
  bool operator==(const ChatMessage&) const = default;
};

class RunStore {
 public:
  // Opens (creating it and its folder when absent) the store at `path`: WAL mode, foreign keys on, a 5 s
  // busy timeout, schema migrated to kSchemaVersion. Throws ls::Error naming the file when it is not a
  // SQLite database, is corrupt, is another program's database, or has a newer schema than we know.
  explicit RunStore(const std::filesystem::path& path);
  RunStore(RunStore&&) noexcept = default;
  RunStore& operator=(RunStore&&) noexcept = default;

  const std::filesystem::path& path() const { return db_.path(); }

  // [runs]
  // A new run in status created; returns its id (ids are never reused).
  int64_t create_run(const NewRun& run);
  // Status changes; each throws ls::Error naming the run when there is no such run.
  //   running:                    started_at set the first time; writer_pid = this process; heartbeat
  //                               now; finished_at and error cleared (a resumed run runs again).
  //   paused, created:            the status only.
  //   finished, failed, stopped:  finished_at = now; error as given (empty: NULL).
  void set_status(int64_t run, RunStatus status, std::string_view error = {});
  // Refreshes heartbeat_at of a running or paused run. Returns false (and writes nothing) when the run is
  // no longer running or paused, e.g. another process marked it stale: its writer should stop.
  bool update_heartbeat(int64_t run, double now = unix_now());
  // Runs in status running or paused whose heartbeat_at is older than now - timeout_s (or absent) become
  // failed with error "interrupted" and finished_at = their last heartbeat. Returns their ids, ascending.
  std::vector<int64_t> mark_stale_runs(double now, double timeout_s);
  std::vector<RunInfo> list_runs() const;  // newest first
  std::optional<RunInfo> find_run(int64_t run) const;
  RunInfo run(int64_t run) const;  // throws ls::Error naming the run when absent

  // [metrics]
  // Writes a step (insert, or replace the same step). A row without val_loss keeps the val_loss already
  // stored for that step; likewise an empty gpu_ms keeps the stored one.
  void log_metrics(int64_t run, const MetricRow& row);
  // The same for many steps in one transaction: readers see all of them or none.
  void log_metrics(int64_t run, std::span<const MetricRow> rows);
  // Rows with step > after_step, by step: for polling new steps (after_step = last step seen; -1: all).
  std::vector<MetricRow> metrics(int64_t run, int64_t after_step = -1) const;
  // Rows written or rewritten after `after_rev`, by rev: for polling that must also see a step rewritten
  // after it was read. Keep the largest rev seen and pass it next time (0: all).
  std::vector<MetricRow> metrics_changed(int64_t run, int64_t after_rev) const;

  // Deletes the run's metrics of steps after `step`. Returns how many it deleted.
  int64_t delete_metrics_after(int64_t run, int64_t step);
  // Copies the metrics of steps 1..through_step of run `from` into run `to` (a run that starts from the
  // other's checkpoint keeps the curve that led there).
  void copy_metrics(int64_t from, int64_t to, int64_t through_step);

  // [events]
  int64_t add_event(int64_t run, std::string_view kind, std::optional<int64_t> step, std::string_view message);
  std::vector<RunEvent> events(int64_t run) const;  // oldest first
  // A run continued from its checkpoint at `step`, in one transaction: its metrics after `step` (those of the
  // attempt that was cut off, which the resumed steps replace) are deleted and a kEventResumed event with
  // `message` is added. Throws ls::Error naming the run when there is no such run.
  void resume_run(int64_t run, int64_t step, std::string_view message);

  // [checkpoints]
  // Records a checkpoint (a second one for the same step replaces the first).
  void add_checkpoint(int64_t run, int64_t step, const std::filesystem::path& path);
  std::vector<Checkpoint> checkpoints(int64_t run) const;   // by step
  std::optional<Checkpoint> latest_checkpoint(int64_t run) const;  // the largest step

  // [exports]
  int64_t add_export(int64_t run, const std::filesystem::path& path, ExportFormat format);  // returns its id
  std::vector<ExportInfo> exports(int64_t run) const;  // oldest first

  // [chats]
  int64_t create_chat(const NewChat& chat);  // returns its id
  // Appends a message; returns its index (0 for the first).
  int64_t add_chat_message(int64_t chat, const ChatMessage& message);
  std::vector<ChatMessage> chat_messages(int64_t chat) const;  // by index
  std::vector<ChatInfo> list_chats() const;                    // newest first

  // [settings] Values are text (JSON where structured).
  std::optional<std::string> setting(std::string_view key) const;
  void set_setting(std::string_view key, std::string_view value);

 private:
  RunInfo read_run(const Query& q) const;
  MetricRow read_metric(const Query& q, int64_t run) const;
  void check_run_exists(int64_t run, std::string_view doing) const;

  Database db_;
};

}  // namespace ls::store
