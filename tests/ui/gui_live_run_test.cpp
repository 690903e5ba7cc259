// The desktop app follows a `lorastudio --batch` run of another process live: the batch run trains the
// tiny fixture model into a run store; the window (Xvfb when DISPLAY is unset, lavapipe, validation on)
// opens the same store with a --ui-script that waits until the Runs list has read 2 of that run's steps,
// writes its state, waits for 12 steps and writes it again. Asserts: both states list the run as running,
// the second with more steps read than the first (polled while the other process writes), the loss chart
// of the latest run has points, no validation message; then Ctrl-C stops the batch run, which writes a
// checkpoint and exits with 130.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gui_run.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const nlohmann::json* find_run(const nlohmann::json& state, const std::string& name) {
  for (const auto& r : state["runs"])
    if (r["name"] == name) return &r;
  return nullptr;
}

TEST(GuiLiveRun, RunsOfAnotherProcessUpdateLive) {
  const fs::path out = fs::path(LS_BINARY_DIR) / "gui_live_run_test";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path src = LS_SOURCE_DIR, store = out / "runs.sqlite";
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;

  // The other process: enough steps, each of 8 micro-batches, that it is still running when the window has
  // looked twice.
  const pid_t batch = fork();
  ASSERT_GE(batch, 0);
  if (batch == 0) {
    const std::string log = (out / "batch_log.txt").string();
    if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(127);
    execl(binary, binary, "--batch", "--model", (src / "tests/fixtures/models/qwen2_tiny").c_str(), "--data",
          (src / "assets/demo/tiny_chat.jsonl").c_str(), "--out", (out / "ext-run").c_str(), "--steps", "2000",
          "--grad-accum", "8", "--lr", "1e-3", "--store", store.c_str(), "--quiet", static_cast<char*>(nullptr));
    _exit(127);
  }

  // The window opens the store once the batch run has made it (not while it creates the schema).
  for (int i = 0; i < 600 && !fs::exists(out / "ext-run" / "config.json"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(1));

  std::ofstream(out / "scenario.txt") << "timeout 240\n"
                                      << "wait_for run_metrics:ext-run>=2 120\n"
                                      << "state " << (out / "state1.json").string() << "\n"
                                      << "wait_for run_metrics:ext-run>=12 120\n"
                                      << "frames 3\n"
                                      << "state " << (out / "state2.json").string() << "\n"
                                      << "quit\n";
  std::string cmd = "'" + std::string(binary) + "' --validation --ui-script '" + (out / "scenario.txt").string() +
                    "' --geometry 1280x720 --store '" + store.string() + "'";
  const auto shown = test::on_a_display(cmd, 1280, 720);
  ASSERT_TRUE(shown) << "no DISPLAY and no Xvfb: apt-get install xvfb xauth";
  cmd = *shown;
  cmd += " >'" + (out / "log.txt").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());

  // Stop the batch run as a user would: Ctrl-C.
  int batch_status = 0;
  kill(batch, SIGINT);
  waitpid(batch, &batch_status, 0);

  const std::string log = test::read_text(out / "log.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << log;
  const auto s1 = nlohmann::json::parse(test::read_text(out / "state1.json"));
  const auto s2 = nlohmann::json::parse(test::read_text(out / "state2.json"));
  EXPECT_EQ(s2["script_error"], "");
  const auto* r1 = find_run(s1, "ext-run");
  const auto* r2 = find_run(s2, "ext-run");
  ASSERT_TRUE(r1 && r2) << s2.dump(2);
  EXPECT_EQ((*r1)["status"], "running");
  EXPECT_EQ((*r2)["status"], "running");
  const size_t m1 = (*r1)["metrics"], m2 = (*r2)["metrics"];
  std::printf("[ gui ] the other process's run, as the window read it: %zu steps, then %zu\n", m1, m2);
  EXPECT_GE(m1, 2u);
  EXPECT_GE(m2, 12u);
  EXPECT_GT(m2, m1) << "the window kept reading the run while it trained";
  EXPECT_GT(s2["chart_points"].get<int>(), 0) << "the loss chart shows the latest run";
  EXPECT_EQ(s2["validation_messages"], 0) << log;

  EXPECT_TRUE(WIFEXITED(batch_status) && WEXITSTATUS(batch_status) == 130) << test::read_text(out / "batch_log.txt");
  bool checkpoint = false;
  for (const auto& e : fs::directory_iterator(out / "ext-run"))
    checkpoint |= e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_TRUE(checkpoint) << "Ctrl-C writes a checkpoint";
}

}  // namespace
}  // namespace ls
