// The Runs panel's Resume: a `lorastudio --batch` run is killed (SIGKILL) after its checkpoint-2 and
// found stale (failed, "interrupted", as the window's sweep marks it); the window (Xvfb when DISPLAY is
// unset, lavapipe, validation on) selects it, clicks Resume and waits until training ends. Asserts: the
// store still holds one run, finished, with one series of steps 1..6 and a "resumed" event at step 2 or
// later; the window listed that run with its 6 steps; no validation message.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gui_run.h"
#include "store/run_store.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

TEST(GuiResume, ResumeButtonContinuesAnInterruptedRun) {
  const fs::path out = fs::path(LS_BINARY_DIR) / "gui_resume_test";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path src = LS_SOURCE_DIR, store = out / "runs.sqlite", run_dir = out / "resume-run";
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;

  std::fflush(stdout);
  const pid_t batch = fork();
  ASSERT_GE(batch, 0);
  if (batch == 0) {
    const std::string log = (out / "batch_log.txt").string();
    if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(127);
    execl(binary, binary, "--batch", "--model", (src / "tests/fixtures/models/qwen2_tiny").c_str(), "--data",
          (src / "assets/demo/tiny_chat.jsonl").c_str(), "--out", run_dir.c_str(), "--steps", "6", "--save-every",
          "2", "--grad-accum", "4", "--store", store.c_str(), "--quiet", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 1200 && !fs::exists(run_dir / "checkpoint-2"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(batch, SIGKILL);
  waitpid(batch, nullptr, 0);
  ASSERT_TRUE(fs::exists(run_dir / "checkpoint-2")) << test::read_text(out / "batch_log.txt");
  int64_t id = 0;
  {
    store::RunStore runs(store);
    ASSERT_EQ(runs.list_runs().size(), 1u);
    id = runs.list_runs().front().id;
    runs.mark_stale_runs(store::unix_now() + 3600, 0);  // what the window's sweep does after 300 s
    ASSERT_EQ(runs.run(id).status, store::RunStatus::failed);
  }

  std::ofstream(out / "scenario.txt") << "timeout 240\n"
                                      << "wait_for run_metrics:resume-run>=1 60\n"
                                      // Resume is enabled once the panel has read the run's checkpoint.
                                      << "wait_for run_checkpoints:resume-run>=1 60\n"
                                      << "frames 3\n"
                                      << "click runs.row." << id << "\n"
                                      << "frames 3\n"
                                      << "click runs.resume\n"
                                      << "wait_for trained 200\n"
                                      << "wait_for run_metrics:resume-run>=6 30\n"
                                      << "frames 3\n"
                                      << "state " << (out / "state.json").string() << "\n"
                                      << "quit\n";
  test::ScriptRun app;
  ASSERT_NO_FATAL_FAILURE(test::run_scenario(binary, out, store, 1280, 720, app));
  const std::string& log = app.log;
  const nlohmann::json& state = app.state;
  EXPECT_EQ(state["script_error"], "");
  EXPECT_EQ(state["validation_messages"], 0) << log;
  ASSERT_EQ(state["runs"].size(), 1u) << state.dump(2);
  EXPECT_EQ(state["runs"][0]["id"], id);
  EXPECT_EQ(state["runs"][0]["metrics"], 6);

  store::RunStore runs(store);
  ASSERT_EQ(runs.list_runs().size(), 1u) << "the same entry went on";
  EXPECT_EQ(runs.run(id).status, store::RunStatus::finished);
  const auto rows = runs.metrics(id);
  ASSERT_EQ(rows.size(), 6u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].step, int64_t(i) + 1);
  const auto events = runs.events(id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, store::kEventResumed);
  EXPECT_GE(events[0].step.value_or(0), 2);
  EXPECT_TRUE(fs::exists(run_dir / "adapter" / "adapter_model.safetensors"));
}

}  // namespace
}  // namespace ls
