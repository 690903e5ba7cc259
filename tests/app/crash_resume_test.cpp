// Crash safety of `lorastudio --batch`, as a user meets it: a run of the tiny fixture model is killed
// with SIGKILL six times, at moments of each kind in turn, when within them picked by a seeded generator
// (LS_CRASH_SEED overrides the seed): a random time inside the steps, while a checkpoint folder is being
// written (its .partial folder exists), right after a checkpoint folder appeared (around its run-store
// row's commit), right after the store's WAL grew (after a commit, during the next), each time
// resumed with --resume from its latest complete checkpoint, until it finishes. Asserts, against a run
// that was never interrupted (same options, its own store):
// - the final adapter is the same, byte for byte;
// - the store passes PRAGMA integrity_check and holds exactly one run entry, finished, without error,
//   whose metrics are steps 1..N once each with the uninterrupted run's losses to the last bit;
// - every resume that reached the store left a "resumed" event at the step it resumed from;
// - nothing half-written is left: no *.tmp.<pid> file, no *.partial.<pid> folder, and every checkpoint
//   folder holds its adapter, optimizer moments and trainer state.
// The first kill waits for a checkpoint, so every attempt after it resumes (a run killed before its first
// checkpoint has nothing to resume from and starts over as a new run).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ls {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kSteps = 24;
constexpr int kSaveEvery = 2;
constexpr int kKills = 6;

std::string bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `lorastudio --batch` into `out` with `store`, resumed from `resume` when set; stdout and stderr to `log`.
pid_t start_batch(const fs::path& out, const fs::path& store, const std::optional<fs::path>& resume,
                  const fs::path& log) {
  const fs::path src = LS_SOURCE_DIR;
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
  std::vector<std::string> args = {binary,
                                   "--batch",
                                   "--model",
                                   (src / "tests/fixtures/models/qwen2_tiny").string(),
                                   "--data",
                                   (src / "assets/demo/tiny_chat.jsonl").string(),
                                   "--out",
                                   out.string(),
                                   "--steps",
                                   std::to_string(kSteps),
                                   "--save-every",
                                   std::to_string(kSaveEvery),
                                   "--rank",
                                   "4",
                                   "--lr",
                                   "5e-3",
                                   "--seed",
                                   "7",
                                   "--store",
                                   store.string(),
                                   "--quiet"};
  if (resume) args.insert(args.end(), {"--resume", resume->string()});
  std::fflush(stdout);  // or the child's freopen writes our buffered lines a second time
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log.c_str(), "a", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(127);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary, argv.data());
    _exit(127);
  }
  return pid;
}

// checkpoint-N folders (complete ones: the name has nothing after N), by step.
std::vector<std::pair<int, fs::path>> checkpoints(const fs::path& out) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("checkpoint-", 0) != 0) continue;
    int step = 0;
    const char* last = name.data() + name.size();
    const auto [end, err] = std::from_chars(name.data() + 11, last, step);
    if (err == std::errc() && end == last) found.emplace_back(step, it->path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool has_partial_checkpoint(const fs::path& out) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().find(".partial.") != std::string::npos) return true;
  return false;
}

// Waits until `ready` holds or the process ends; true when it is still running (and `ready` held or the
// time ran out), false when it ended by itself (its wait status in *status).
bool wait_until(pid_t pid, int* status, const std::function<bool()>& ready, double timeout_s) {
  const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < end) {
    if (waitpid(pid, status, WNOHANG) == pid) return false;
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

struct Sql {
  explicit Sql(const fs::path& p) { EXPECT_EQ(sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK); }
  ~Sql() { sqlite3_close(db); }
  // Each row's columns as text ("" for NULL).
  std::vector<std::vector<std::string>> rows(const char* sql) const {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db);
    while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const auto* t = sqlite3_column_text(stmt, i);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return out;
  }
  sqlite3* db = nullptr;
};

TEST(CrashResume, KilledAndResumedRunEqualsTheUninterruptedOne) {
  const fs::path dir = fs::path(LS_BINARY_DIR) / "crash_resume_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path log = dir / "log.txt";
  auto log_text = [&] { return bytes(log); };

  // The uninterrupted run; its wall time scales the random kill moments.
  const auto t0 = Clock::now();
  const pid_t ref = start_batch(dir / "ref", dir / "ref.sqlite", std::nullopt, log);
  ASSERT_GT(ref, 0);
  int status = 0;
  waitpid(ref, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_text();
  const double ref_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("[ crash ] uninterrupted run: %.1f s\n", ref_s);

  const fs::path out = dir / "crash", store = dir / "crash.sqlite";
  // LS_CRASH_SEED picks other kill moments (e.g. to run it many times); the default is fixed.
  const char* seed_env = std::getenv("LS_CRASH_SEED");
  const unsigned seed = seed_env ? unsigned(std::strtoul(seed_env, nullptr, 10)) : 20261125u;
  std::printf("[ crash ] seed %u\n", seed);
  std::mt19937 rng(seed);
  std::vector<int> resumed_from;
  int kills = 0;
  bool finished = false;
  for (int attempt = 0; attempt < 30 && !finished; ++attempt) {
    std::optional<fs::path> resume;
    if (const auto cps = checkpoints(out); !cps.empty()) resume = cps.back().second;
    if (resume) resumed_from.push_back(checkpoints(out).back().first);
    const pid_t pid = start_batch(out, store, resume, log);
    ASSERT_GT(pid, 0);
    bool running = true;
    if (kills < kKills) {
      const size_t had = checkpoints(out).size();
      // Every kind of moment in turn; the seeded generator picks when within each.
      const int how = (attempt + 3) % 4;
      const char* what = "";
      if (attempt == 0) {  // after the first checkpoint, so that there is something to resume from
        running = wait_until(pid, &status, [&] { return !checkpoints(out).empty(); }, 120);
        what = "after the first checkpoint appeared";
      } else if (how == 0) {
        // Mostly inside the steps after start-up (the first second or so of a process is start-up).
        std::uniform_real_distribution<double> at(0.05 * ref_s, 0.6 * ref_s);
        const double delay = at(rng);
        running = wait_until(pid, &status, [] { return false; }, delay);
        what = "at a random moment";
      } else if (how == 1) {
        running = wait_until(pid, &status, [&] { return checkpoints(out).size() > had; }, 120);
        what = "right after a checkpoint folder appeared (before or while its store row is committed)";
      } else if (how == 2) {
        running = wait_until(pid, &status, [&] { return has_partial_checkpoint(out); }, 120);
        what = "while a checkpoint folder was being written";
      } else {
        const fs::path wal = store.string() + "-wal";
        std::error_code ec;
        const auto size0 = fs::exists(wal, ec) ? fs::file_size(wal, ec) : 0;
        // A few commits in (opening the entry, then some steps' metrics).
        const uintmax_t grow = 4096u * (1 + rng() % 8);
        running = wait_until(pid, &status, [&] {
          std::error_code e;
          return fs::exists(wal, e) && fs::file_size(wal, e) >= size0 + grow;
        }, 120);
        what = "right after the store's WAL grew";
      }
      if (running) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ++kills;
        const auto cps = checkpoints(out);
        std::printf("[ crash ] attempt %d (%s step %d): killed %s; latest checkpoint now %d%s\n", attempt,
                    resume ? "resumed at" : "fresh,", resume ? resumed_from.back() : 0, what,
                    cps.empty() ? 0 : cps.back().first, has_partial_checkpoint(out) ? ", a partial folder left" : "");
        continue;
      }
    } else {
      waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_text();
    std::printf("[ crash ] attempt %d (resumed at step %d) finished\n", attempt, resume ? resumed_from.back() : 0);
    finished = true;
  }
  ASSERT_TRUE(finished);
  EXPECT_GE(kills, 3) << "most kills should land while the run is running";

  // The adapter, bit for bit.
  const std::string want = bytes(dir / "ref" / "adapter" / "adapter_model.safetensors");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(bytes(out / "adapter" / "adapter_model.safetensors"), want);

  // The store.
  const Sql db(store), ref_db(dir / "ref.sqlite");
  EXPECT_EQ(db.rows("PRAGMA integrity_check"), (std::vector<std::vector<std::string>>{{"ok"}}));
  const auto runs = db.rows("SELECT id, status, IFNULL(error, '') FROM runs");
  ASSERT_EQ(runs.size(), 1u) << "one entry for the whole training";
  EXPECT_EQ(runs[0][1], "finished");
  EXPECT_EQ(runs[0][2], "");
  // One series: steps 1..N once each (the primary key forbids duplicates; the count and range show no
  // gap), with the uninterrupted run's losses (printed with 17 significant digits: exact for a double).
  const char* series = "SELECT step, printf('%.17g', loss) FROM metrics ORDER BY step";
  const auto got = db.rows(series), expected = ref_db.rows(series);
  ASSERT_EQ(expected.size(), size_t(kSteps));
  EXPECT_EQ(got, expected);
  // Resume notes: one per resume that got as far as the store, at a step it resumed from.
  const auto events = db.rows("SELECT kind, step, message FROM run_events ORDER BY id");
  EXPECT_GE(events.size(), 1u);
  EXPECT_LE(events.size(), resumed_from.size());
  const std::set<int> steps(resumed_from.begin(), resumed_from.end());
  for (const auto& e : events) {
    EXPECT_EQ(e[0], "resumed");
    EXPECT_TRUE(steps.count(std::stoi(e[1]))) << e[2];
    EXPECT_NE(e[2].find("resumed at step " + e[1]), std::string::npos) << e[2];
  }

  // Nothing half-written.
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << entry.path();
    EXPECT_EQ(name.find(".partial."), std::string::npos) << entry.path();
  }
  for (const auto& [step, cp] : checkpoints(out))
    for (const char* file : {"adapter_model.safetensors", "adapter_config.json", "optimizer.safetensors",
                             "trainer_state.json"})
      EXPECT_TRUE(fs::exists(cp / file)) << cp / file;
  std::printf("[ crash ] %d kills, %zu resumes, %zu resume events\n", kills, resumed_from.size(), events.size());
  if (!testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ls
