// The run store: every table's round trip, a step logged again keeping its val_loss, incremental metric reads, a second
// connection reading while the first writes (WAL), CSV/JSONL export byte for byte, and the refusals (not a
// database, corrupt, another program's database, a newer schema) naming the file. Also a writer process
// that dies mid-run: its rows survive and its run is found stale.
#include "store/run_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/model_files.h"  // TempDir, write_text, read_text, throws_error
#include "store/metrics_export.h"
#include "store/schema.h"

namespace ls::store {
namespace {

using test::read_text;
using test::TempDir;
using test::throws_error;
using test::write_text;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

NewRun sample_run(const std::string& name) {
  return {.name = name,
          .model_path = "/models/Qwen2.5-0.5B",
          .data_path = "/data/train.jsonl",
          .config_json = R"({"lr":0.0002,"rank":8})",
          .out_dir = "/runs/" + name};
}

MetricRow row(int64_t step) {
  return {.step = step,
          .time = 1700000000.0 + double(step) * 0.25,
          .loss = 3.0 - double(step) * 1e-3,
          .lr = 2e-4,
          .grad_norm = 0.5 + double(step) * 1e-4,
          .tokens_per_s = 4000.0 + double(step)};
}

// Runs one SQL statement on the file with a separate raw connection (to tamper with it).
void raw_exec(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string raw_text(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

// Same value, NaN equal to NaN.
void expect_same(double a, double b, const char* what) {
  if (std::isnan(b))
    EXPECT_TRUE(std::isnan(a)) << what << ": " << a;
  else
    EXPECT_EQ(a, b) << what;
}

void expect_same_row(const MetricRow& a, const MetricRow& b) {
  SCOPED_TRACE("step " + std::to_string(b.step));
  EXPECT_EQ(a.step, b.step);
  expect_same(a.time, b.time, "time");
  expect_same(a.loss, b.loss, "loss");
  EXPECT_EQ(a.val_loss, b.val_loss);
  expect_same(a.lr, b.lr, "lr");
  expect_same(a.grad_norm, b.grad_norm, "grad_norm");
  expect_same(a.tokens_per_s, b.tokens_per_s, "tokens_per_s");
  EXPECT_EQ(a.gpu_ms, b.gpu_ms);
}

// Sets an environment variable for the scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// [open] -------------------------------------------------------------------------------------------------

TEST(RunStore, CreatesFolderAndFileInWalModeAndReopens) {
  TempDir dir;
  const auto path = dir / "a/b/runs.sqlite";
  int64_t id = 0;
  {
    RunStore store(path);
    EXPECT_EQ(store.path(), path);
    id = store.create_run(sample_run("first"));
    EXPECT_TRUE(std::filesystem::exists(path.string() + "-wal"));
  }
  EXPECT_EQ(raw_text(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_text(path, "SELECT version FROM schema_version"), std::to_string(kSchemaVersion));
  RunStore again(path);
  ASSERT_EQ(again.list_runs().size(), 1u);
  EXPECT_EQ(again.run(id).name, "first");
  RunStore moved = std::move(again);
  EXPECT_EQ(moved.run(id).name, "first");
}

TEST(RunStore, DefaultPathFollowsXdg) {
  {
    ScopedEnv xdg("XDG_DATA_HOME", "/x/data");
    EXPECT_EQ(default_store_path(), "/x/data/lorastudio/runs.sqlite");
  }
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv xdg("XDG_DATA_HOME", "relative/data");  // ignored: the spec wants an absolute path
    EXPECT_EQ(default_store_path(), "/home/u/.local/share/lorastudio/runs.sqlite");
  }
  {
    ScopedEnv xdg("XDG_DATA_HOME", nullptr);
    EXPECT_EQ(default_store_path(), "/home/u/.local/share/lorastudio/runs.sqlite");
    ScopedEnv no_home("HOME", nullptr);
    EXPECT_TRUE(throws_error([] { default_store_path(); }, {"XDG_DATA_HOME", "HOME"}));
  }
}

TEST(RunStore, NotADatabaseNamesTheFile) {
  TempDir dir;
  const auto path = dir / "garbage.sqlite";
  std::string junk;
  while (junk.size() < 8192) junk += "this is not a database, just text. ";
  write_text(path, junk);
  EXPECT_TRUE(throws_error([&] { RunStore s(path); }, {path.string(), "file is not a database"}));
  EXPECT_EQ(read_text(path), junk);  // left as it was
}

TEST(RunStore, CorruptDatabaseNamesTheFile) {
  TempDir dir;
  const auto path = dir / "corrupt.sqlite";
  {
    RunStore store(path);
    const int64_t run = store.create_run(sample_run("r"));
    std::vector<MetricRow> rows;
    for (int64_t s = 0; s < 500; ++s) rows.push_back(row(s));
    store.log_metrics(run, rows);
  }
  // Keep page 1 (the header and the schema) and overwrite every other page with garbage.
  std::string bytes = read_text(path);
  ASSERT_GT(bytes.size(), 3 * 4096u);
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = char(0xA5 ^ (i * 7));
  write_text(path, bytes);
  EXPECT_TRUE(throws_error(
      [&] {
        RunStore s(path);
        for (const RunInfo& r : s.list_runs()) s.metrics(r.id);
      },
      {path.string(), "malformed"}));
}

TEST(RunStore, ForeignDatabaseAndFolderAreRefused) {
  TempDir dir;
  const auto path = dir / "other.sqlite";
  raw_exec(path, "CREATE TABLE accounts (id INTEGER PRIMARY KEY)");
  EXPECT_TRUE(throws_error([&] { RunStore s(path); }, {path.string(), "not a lorastudio run store"}));
  std::filesystem::create_directories(dir / "folder.sqlite");
  EXPECT_TRUE(throws_error([&] { RunStore s(dir / "folder.sqlite"); }, {(dir / "folder.sqlite").string(), "open"}));
}

TEST(RunStore, NewerSchemaIsRefused) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  { RunStore store(path); }
  raw_exec(path, "UPDATE schema_version SET version = 3");
  EXPECT_TRUE(throws_error([&] { RunStore s(path); }, {path.string(), "schema version 3 is newer", "(2)"}));
  raw_exec(path, "DELETE FROM schema_version");
  EXPECT_TRUE(throws_error([&] { RunStore s(path); }, {path.string(), "schema_version must hold exactly one"}));
}

// A store of version 1 (no run_events) gains the table on open; its runs and metrics stay.
TEST(RunStore, VersionOneStoreMigratesToEvents) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  int64_t id = 0;
  {
    RunStore store(path);
    id = store.create_run(sample_run("old"));
    store.log_metrics(id, row(1));
  }
  raw_exec(path, "DROP TABLE run_events; UPDATE schema_version SET version = 1");
  RunStore store(path);
  EXPECT_EQ(raw_text(path, "SELECT version FROM schema_version"), "2");
  EXPECT_EQ(store.metrics(id).size(), 1u);
  store.add_event(id, kEventResumed, 1, "resumed at step 1");
  ASSERT_EQ(store.events(id).size(), 1u);
  EXPECT_EQ(store.run(id).notes, "resumed at step 1");
}

// [runs] -------------------------------------------------------------------------------------------------

TEST(RunStore, RunLifecycleRoundTrip) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const double before = unix_now();
  const int64_t id = store.create_run(sample_run("alpha"));
  RunInfo r = store.run(id);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.name, "alpha");
  EXPECT_GE(r.created_at, before);
  EXPECT_LE(r.created_at, unix_now());
  EXPECT_EQ(r.status, RunStatus::created);
  EXPECT_EQ(r.model_path, "/models/Qwen2.5-0.5B");
  EXPECT_EQ(r.data_path, "/data/train.jsonl");
  EXPECT_EQ(r.config_json, R"({"lr":0.0002,"rank":8})");
  EXPECT_EQ(r.out_dir, "/runs/alpha");
  EXPECT_FALSE(r.started_at || r.finished_at || r.writer_pid || r.heartbeat_at);
  EXPECT_EQ(r.error, "");

  store.set_status(id, RunStatus::running);
  r = store.run(id);
  EXPECT_EQ(r.status, RunStatus::running);
  ASSERT_TRUE(r.started_at && r.heartbeat_at && r.writer_pid);
  EXPECT_EQ(*r.writer_pid, ::getpid());
  EXPECT_EQ(*r.heartbeat_at, *r.started_at);
  const double started = *r.started_at;

  store.set_status(id, RunStatus::paused);
  EXPECT_EQ(store.run(id).status, RunStatus::paused);
  store.set_status(id, RunStatus::stopped);
  r = store.run(id);
  EXPECT_EQ(r.status, RunStatus::stopped);
  ASSERT_TRUE(r.finished_at);
  EXPECT_EQ(r.error, "");
  store.set_status(id, RunStatus::running);  // resumed: started_at stays, finished_at goes
  r = store.run(id);
  EXPECT_EQ(*r.started_at, started);
  EXPECT_FALSE(r.finished_at);
  store.set_status(id, RunStatus::failed, "vk: device lost");
  r = store.run(id);
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_EQ(r.error, "vk: device lost");
  EXPECT_TRUE(r.finished_at);
  store.set_status(id, RunStatus::finished);
  EXPECT_EQ(store.run(id).error, "");

  for (RunStatus s : {RunStatus::created, RunStatus::running, RunStatus::paused, RunStatus::finished,
                      RunStatus::failed, RunStatus::stopped})
    EXPECT_EQ(parse_run_status(run_status_name(s)), s);
  EXPECT_FALSE(parse_run_status("sleeping"));
}

TEST(RunStore, ListsRunsNewestFirstAndNamesMissingRuns) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  RunStore store(path);
  const int64_t a = store.create_run(sample_run("a"));
  const int64_t b = store.create_run(sample_run("b"));
  const int64_t c = store.create_run(sample_run("c"));
  std::vector<int64_t> ids;
  for (const RunInfo& r : store.list_runs()) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{c, b, a}));

  EXPECT_FALSE(store.find_run(999));
  EXPECT_TRUE(throws_error([&] { store.run(999); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(throws_error([&] { store.set_status(999, RunStatus::running); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(throws_error([&] { store.log_metrics(999, row(1)); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(throws_error([&] { store.add_checkpoint(999, 1, "/c"); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(
      throws_error([&] { store.add_export(999, "/e", ExportFormat::gguf); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(throws_error([&] { store.create_chat({.run_id = 999}); }, {path.string(), "run 999: no such run"}));
  EXPECT_TRUE(throws_error([&] { store.log_metrics(a, row(-1)); }, {path.string(), "step -1 is negative"}));
  EXPECT_TRUE(store.metrics(a).empty());  // the failed batch left nothing

  // A status the reader does not know (written by hand) is named, not guessed.
  raw_exec(path, "UPDATE runs SET status = 'sleeping' WHERE id = 1");
  EXPECT_TRUE(throws_error([&] { store.run(a); }, {path.string(), "run 1: unknown status \"sleeping\""}));
}

// [metrics] ----------------------------------------------------------------------------------------------

TEST(RunStore, MetricsRoundTrip) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  std::vector<MetricRow> rows = {row(0), row(1), row(2), row(7)};
  rows[1].val_loss = 2.75;
  rows[1].gpu_ms = {{"matmul", 12.5}, {"attention", 3.25}, {"adamw", 0.125}};  // order kept
  rows[2].loss = kNaN;  // a diverged step survives as NaN
  rows[2].grad_norm = kInf;
  rows[3].tokens_per_s = -kInf;
  int64_t run = 0, other = 0;
  {
    RunStore store(path);
    run = store.create_run(sample_run("m"));
    other = store.create_run(sample_run("other"));
    store.log_metrics(run, std::span<const MetricRow>(rows).first(2));
    store.log_metrics(run, rows[2]);
    store.log_metrics(run, rows[3]);
    store.log_metrics(other, row(1));
  }
  RunStore store(path);
  const auto back = store.metrics(run);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) expect_same_row(back[i], rows[i]);
  EXPECT_EQ(raw_text(path, "SELECT gpu_ms_json FROM metrics WHERE step = 1"),
            R"({"matmul":12.5,"attention":3.25,"adamw":0.125})");
  EXPECT_EQ(store.metrics(other).size(), 1u);
  // Rewriting a step replaces it.
  MetricRow again = row(7);
  again.loss = 1.0;
  store.log_metrics(run, again);
  EXPECT_EQ(store.metrics(run).back().loss, 1.0);
  EXPECT_EQ(store.metrics(run).size(), rows.size());
}

TEST(RunStore, LoggingAStepAgainKeepsItsValLossAndGpuTimes) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t run = store.create_run(sample_run("v"));
  MetricRow step10 = row(10);
  step10.gpu_ms = {{"matmul", 4.0}};
  step10.val_loss = 1.5;
  store.log_metrics(run, step10);
  auto rows = store.metrics(run);
  ASSERT_EQ(rows.size(), 1u);
  expect_same_row(rows[0], step10);

  // Logging the step again without val_loss or GPU times keeps the stored ones.
  MetricRow rewrite = row(10);
  rewrite.loss = 0.5;
  store.log_metrics(run, rewrite);
  rows = store.metrics(run);
  EXPECT_EQ(rows[0].loss, 0.5);
  EXPECT_EQ(rows[0].val_loss, 1.5);
  EXPECT_EQ(rows[0].gpu_ms, step10.gpu_ms);
}

TEST(RunStore, IncrementalReadsByStepAndByRevision) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t run = store.create_run(sample_run("poll"));
  const int64_t other = store.create_run(sample_run("other"));
  std::vector<MetricRow> first;
  for (int64_t s = 0; s < 5; ++s) first.push_back(row(s));
  store.log_metrics(run, first);
  store.log_metrics(other, row(100));  // another run's writes never show up

  auto rows = store.metrics(run);
  ASSERT_EQ(rows.size(), 5u);
  const int64_t last_step = rows.back().step;
  auto changed = store.metrics_changed(run, 0);
  ASSERT_EQ(changed.size(), 5u);
  for (size_t i = 1; i < changed.size(); ++i) EXPECT_GT(changed[i].rev, changed[i - 1].rev);
  int64_t last_rev = changed.back().rev;

  EXPECT_TRUE(store.metrics(run, last_step).empty());
  EXPECT_TRUE(store.metrics_changed(run, last_rev).empty());

  store.log_metrics(run, row(5));
  MetricRow step2 = row(2);
  step2.val_loss = 2.5;
  store.log_metrics(run, step2);  // an old step changes: polling by step misses it, by revision not
  rows = store.metrics(run, last_step);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].step, 5);
  changed = store.metrics_changed(run, last_rev);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].step, 5);
  EXPECT_EQ(changed[1].step, 2);
  EXPECT_EQ(changed[1].val_loss, 2.5);
  last_rev = changed.back().rev;
  EXPECT_TRUE(store.metrics_changed(run, last_rev).empty());
}

// A second connection polls while the first logs 2000 rows in batches: it only ever sees whole batches
// (each is one transaction), in order, without gaps; it writes settings meanwhile (the busy timeout lets
// the two writers take turns); neither side waits long.
TEST(RunStore, ReaderSeesCommittedBatchesWhileWriterLogs) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  RunStore writer(path);
  const int64_t run = writer.create_run(sample_run("live"));
  constexpr int64_t kRows = 2000, kBatch = 25;

  std::atomic<bool> reader_ready{false};
  std::string reader_error;
  int64_t seen = 0, polls = 0, distinct_states = 0;
  double max_poll_s = 0;
  std::thread reader([&] {
    try {
      RunStore store(path);
      int64_t last = -1;
      reader_ready = true;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (seen < kRows && std::chrono::steady_clock::now() < deadline) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto rows = store.metrics(run, last);
        if (++polls % 16 == 0) store.set_setting("ui.poll", std::to_string(polls));
        max_poll_s = std::max(max_poll_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        for (const MetricRow& m : rows) {
          if (m.step != last + 1) throw Error("gap: step " + std::to_string(m.step) + " after " + std::to_string(last));
          if (m.loss != row(m.step).loss) throw Error("wrong loss at step " + std::to_string(m.step));
          last = m.step;
        }
        seen += int64_t(rows.size());
        if (!rows.empty()) ++distinct_states;
        if (seen % kBatch != 0) throw Error("saw " + std::to_string(seen) + " rows: part of a batch");
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
      reader_ready = true;
    }
  });
  while (!reader_ready) std::this_thread::yield();

  double max_write_s = 0;
  for (int64_t first = 0; first < kRows; first += kBatch) {
    std::vector<MetricRow> batch;
    for (int64_t s = first; s < first + kBatch; ++s) batch.push_back(row(s));
    const auto t0 = std::chrono::steady_clock::now();
    writer.log_metrics(run, batch);
    writer.update_heartbeat(run);
    max_write_s = std::max(max_write_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  reader.join();
  EXPECT_EQ(reader_error, "");
  EXPECT_EQ(seen, kRows);
  EXPECT_LT(max_write_s, 1.0);
  EXPECT_LT(max_poll_s, 1.0);
  EXPECT_EQ(writer.metrics(run).size(), size_t(kRows));
  if (polls >= 16) {
    EXPECT_EQ(writer.setting("ui.poll"), std::to_string(polls / 16 * 16));
  }
  std::cout << "reader: " << polls << " polls, " << distinct_states << " with new rows, slowest poll "
            << max_poll_s * 1e3 << " ms; slowest batch write " << max_write_s * 1e3 << " ms\n";
}

// [export] -----------------------------------------------------------------------------------------------

TEST(RunStore, ExportsCsvAndJsonlExactly) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t run = store.create_run(sample_run("x"));
  std::vector<MetricRow> rows = {
      {.step = 1, .time = 1700000000.5, .loss = 2.5, .lr = 1e-4, .grad_norm = 1.25, .tokens_per_s = 1000,
       .gpu_ms = {{"attention", 1.5}, {"matmul", 3}}},
      {.step = 2, .time = 1700000001.25, .loss = kNaN, .val_loss = 2.25, .lr = 1e-5, .grad_norm = kInf,
       .tokens_per_s = 1234.5},
      {.step = 10, .time = 1700000002, .loss = 0.1, .lr = 0, .grad_norm = -kInf, .tokens_per_s = 3.0e6}};
  store.log_metrics(run, rows);
  const auto back = store.metrics(run);

  write_metrics_csv(dir / "m.csv", back);
  EXPECT_EQ(read_text(dir / "m.csv"),
            "step,time,loss,val_loss,lr,grad_norm,tokens_per_s\n"
            "1,1700000000.5,2.5,,0.0001,1.25,1000.0\n"
            "2,1700000001.25,nan,2.25,1e-05,inf,1234.5\n"
            "10,1700000002.0,0.1,,0.0,-inf,3000000.0\n");
  write_metrics_jsonl(dir / "m.jsonl", back);
  EXPECT_EQ(read_text(dir / "m.jsonl"),
            R"({"step":1,"time":1700000000.5,"loss":2.5,"val_loss":null,"lr":0.0001,"grad_norm":1.25,)"
            R"("tokens_per_s":1000.0,"gpu_ms":{"attention":1.5,"matmul":3.0}})"
            "\n"
            R"({"step":2,"time":1700000001.25,"loss":null,"val_loss":2.25,"lr":1e-05,"grad_norm":null,)"
            R"("tokens_per_s":1234.5})"
            "\n"
            R"({"step":10,"time":1700000002.0,"loss":0.1,"val_loss":null,"lr":0.0,"grad_norm":null,)"
            R"("tokens_per_s":3000000.0})"
            "\n");
  EXPECT_EQ(metrics_csv({}), "step,time,loss,val_loss,lr,grad_norm,tokens_per_s\n");
  EXPECT_EQ(metrics_jsonl({}), "");
  EXPECT_TRUE(throws_error([&] { write_metrics_csv(dir / "no/such/folder/m.csv", back); }, {"no/such/folder/m.csv"}));
}

// [checkpoints, exports, chats, settings] ----------------------------------------------------------------

TEST(RunStore, CheckpointsRoundTrip) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t run = store.create_run(sample_run("c"));
  EXPECT_FALSE(store.latest_checkpoint(run));
  store.add_checkpoint(run, 200, "/runs/c/step-200");
  store.add_checkpoint(run, 100, "/runs/c/step-100");
  store.add_checkpoint(run, 300, "/runs/c/step-300");
  store.add_checkpoint(run, 200, "/runs/c/step-200b");  // the same step again replaces it
  const auto all = store.checkpoints(run);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].step, 100);
  EXPECT_EQ(all[1].path, "/runs/c/step-200b");
  EXPECT_EQ(all[2].run_id, run);
  EXPECT_GT(all[2].created_at, 0);
  EXPECT_EQ(store.latest_checkpoint(run)->path, "/runs/c/step-300");
}

TEST(RunStore, ExportsRoundTrip) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  RunStore store(path);
  const int64_t run = store.create_run(sample_run("e"));
  const int64_t a = store.add_export(run, "/out/adapter", ExportFormat::peft);
  const int64_t b = store.add_export(run, "/out/merged", ExportFormat::merged);
  const int64_t c = store.add_export(run, "/out/model.gguf", ExportFormat::gguf);
  const auto all = store.exports(run);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, a);
  EXPECT_EQ(all[1].id, b);
  EXPECT_EQ(all[2].id, c);
  EXPECT_EQ(all[0].format, ExportFormat::peft);
  EXPECT_EQ(all[1].format, ExportFormat::merged);
  EXPECT_EQ(all[2].format, ExportFormat::gguf);
  EXPECT_EQ(all[2].path, "/out/model.gguf");
  EXPECT_EQ(all[2].run_id, run);
  raw_exec(path, "UPDATE exports SET format = 'onnx' WHERE id = 2");
  EXPECT_TRUE(throws_error([&] { store.exports(run); }, {path.string(), "export 2: unknown format \"onnx\""}));
}

TEST(RunStore, ChatsRoundTrip) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  RunStore store(path);
  const int64_t run = store.create_run(sample_run("chatty"));
  const int64_t plain = store.create_chat({.title = "base model"});
  const int64_t tuned = store.create_chat({.run_id = run, .adapter_path = "/runs/chatty/adapter", .title = "tuned"});
  const std::vector<ChatMessage> messages = {
      {"system", "You are terse."}, {"user", "Hi — ¿qué tal? 你好"}, {"assistant", "Hello.\nLine two."}};
  for (size_t i = 0; i < messages.size(); ++i) EXPECT_EQ(store.add_chat_message(tuned, messages[i]), int64_t(i));
  EXPECT_EQ(store.chat_messages(tuned), messages);
  EXPECT_TRUE(store.chat_messages(plain).empty());

  const auto chats = store.list_chats();
  ASSERT_EQ(chats.size(), 2u);
  EXPECT_EQ(chats[0].id, tuned);  // newest first
  EXPECT_EQ(chats[0].run_id, run);
  EXPECT_EQ(chats[0].adapter_path, std::filesystem::path("/runs/chatty/adapter"));
  EXPECT_EQ(chats[1].id, plain);
  EXPECT_FALSE(chats[1].run_id);
  EXPECT_FALSE(chats[1].adapter_path);
  EXPECT_TRUE(throws_error([&] { store.add_chat_message(999, {"user", "x"}); }, {path.string(), "chat 999: no such chat"}));
}

TEST(RunStore, SettingsRoundTrip) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    RunStore store(path);
    EXPECT_FALSE(store.setting("ui.theme"));
    store.set_setting("ui.theme", "dark");
    store.set_setting("ui.theme", "light");
    store.set_setting("train.defaults", R"({"rank":16})");
    store.set_setting("empty", "");
  }
  RunStore store(path);
  EXPECT_EQ(store.setting("ui.theme"), "light");
  EXPECT_EQ(store.setting("train.defaults"), R"({"rank":16})");
  EXPECT_EQ(store.setting("empty"), "");
}

// [crash safety] -----------------------------------------------------------------------------------------

TEST(RunStore, StaleRunsAreMarkedInterrupted) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const double t0 = 1'800'000'000.0;
  const int64_t dead = store.create_run(sample_run("dead"));
  const int64_t alive = store.create_run(sample_run("alive"));
  const int64_t paused = store.create_run(sample_run("paused"));
  const int64_t done = store.create_run(sample_run("done"));
  const int64_t fresh = store.create_run(sample_run("never started"));
  for (int64_t r : {dead, alive, paused, done}) store.set_status(r, RunStatus::running);
  store.set_status(paused, RunStatus::paused);
  store.set_status(done, RunStatus::finished);
  EXPECT_TRUE(store.update_heartbeat(dead, t0));
  EXPECT_TRUE(store.update_heartbeat(alive, t0 + 100));
  EXPECT_TRUE(store.update_heartbeat(paused, t0 + 10));
  EXPECT_FALSE(store.update_heartbeat(done, t0));   // not running: nothing written
  EXPECT_FALSE(store.update_heartbeat(fresh, t0));
  EXPECT_FALSE(store.update_heartbeat(999, t0));

  EXPECT_TRUE(store.mark_stale_runs(t0 + 60, 60).empty());  // exactly at the timeout: not yet
  EXPECT_EQ(store.mark_stale_runs(t0 + 90, 60), (std::vector<int64_t>{dead, paused}));
  for (int64_t r : {dead, paused}) {
    const RunInfo info = store.run(r);
    EXPECT_EQ(info.status, RunStatus::failed);
    EXPECT_EQ(info.error, "interrupted");
    EXPECT_EQ(info.finished_at, info.heartbeat_at);
  }
  EXPECT_EQ(store.run(alive).status, RunStatus::running);
  EXPECT_EQ(store.run(done).status, RunStatus::finished);
  EXPECT_EQ(store.run(fresh).status, RunStatus::created);
  EXPECT_FALSE(store.update_heartbeat(dead, t0 + 95));  // its writer, if alive after all, learns it
  EXPECT_TRUE(store.mark_stale_runs(t0 + 90, 60).empty());
}

// A writer process that dies without closing anything: its committed rows are there, its run is stale.
TEST(RunStore, RunOfAKilledWriterIsFoundStale) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  int64_t run = 0;
  {
    RunStore store(path);
    run = store.create_run(sample_run("crash"));
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    try {
      RunStore store(path);
      store.set_status(run, RunStatus::running);
      for (int64_t first = 0; first < 100; first += 10) {
        std::vector<MetricRow> batch;
        for (int64_t s = first; s < first + 10; ++s) batch.push_back(row(s));
        store.log_metrics(run, batch);
      }
    } catch (...) {
      code = 1;
    }
    ::_exit(code);  // no destructors: the connection is never closed, the WAL never checkpointed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  RunStore store(path);
  const RunInfo info = store.run(run);
  EXPECT_EQ(info.status, RunStatus::running);
  EXPECT_EQ(info.writer_pid, child);
  EXPECT_EQ(store.metrics(run).size(), 100u);
  EXPECT_TRUE(store.mark_stale_runs(unix_now(), 60).empty());
  EXPECT_EQ(store.mark_stale_runs(unix_now() + 120, 60), std::vector<int64_t>{run});
  EXPECT_EQ(store.run(run).error, "interrupted");
}

}  // namespace
}  // namespace ls::store

namespace ls::store {
namespace {

// [resume] -----------------------------------------------------------------------------------------------

// Resuming at step 3 after an attempt that logged steps 1..5: steps 4 and 5 go (the resumed steps replace
// them), an event records the step, the run's notes list every resume in order; a second resume at 4
// adds a second event. Unknown runs are named.
TEST(RunStore, ResumeRunDropsLaterStepsAndRecordsAnEvent) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t id = store.create_run(sample_run("r"));
  const int64_t other = store.create_run(sample_run("other"));
  for (int64_t s = 1; s <= 5; ++s) store.log_metrics(id, row(s)), store.log_metrics(other, row(s));
  store.resume_run(id, 3, "resumed at step 3 from /runs/r/checkpoint-3");
  auto rows = store.metrics(id);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) expect_same_row(rows[i], row(int64_t(i) + 1));
  EXPECT_EQ(store.metrics(other).size(), 5u) << "another run's steps stay";
  auto events = store.events(id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kEventResumed);
  EXPECT_EQ(events[0].step, 3);
  EXPECT_EQ(events[0].run_id, id);
  EXPECT_GT(events[0].time, 0);
  store.log_metrics(id, row(4));
  store.resume_run(id, 4, "second");
  EXPECT_EQ(store.metrics(id).size(), 4u);
  EXPECT_EQ(store.run(id).notes, "resumed at step 3 from /runs/r/checkpoint-3\nsecond");
  EXPECT_EQ(store.events(other).size(), 0u);
  EXPECT_EQ(store.run(other).notes, "");
  EXPECT_TRUE(throws_error([&] { store.resume_run(999, 1, "x"); }, {"run 999", "no such run"}));
}

TEST(RunStore, CopyMetricsThroughAStep) {
  TempDir dir;
  RunStore store(dir / "runs.sqlite");
  const int64_t from = store.create_run(sample_run("from"));
  const int64_t to = store.create_run(sample_run("to"));
  for (int64_t s = 1; s <= 5; ++s) store.log_metrics(from, row(s));
  store.copy_metrics(from, to, 2);
  const auto rows = store.metrics(to);
  ASSERT_EQ(rows.size(), 2u);
  expect_same_row(rows[0], row(1));
  expect_same_row(rows[1], row(2));
  EXPECT_EQ(store.metrics(from).size(), 5u);
  EXPECT_EQ(store.delete_metrics_after(from, 3), 2);
  EXPECT_EQ(store.metrics(from).size(), 3u);
}

}  // namespace
}  // namespace ls::store
