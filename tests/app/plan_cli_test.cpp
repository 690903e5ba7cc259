// `lorastudio --batch ... --plan` as users run it on the tiny Qwen2 fixture: the plan's table (every part
// with its bytes, the total, the device's memory, whether it fits) on stdout and exit 0, without --data and
// with it, training nothing; and a --batch run whose plan is over LORASTUDIO_DEVICE_MEMORY_BUDGET fails with
// one line saying what it needs, what the device has and what to change, writing no adapter.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/run_app.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_plan_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "data.jsonl") << R"({"text": "The quick brown fox jumps over the lazy dog."})" << "\n"
                                       << R"({"prompt": "Say hi:", "completion": " hello there"})" << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

void expect_table(const test::AppResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* want : {"Memory plan: Qwen2ForCausalLM, 2 layers, hidden 64", "base weights", "LoRA + gradients + AdamW",
                           "activations", "loss (logit chunks)", "scratch", "total", "Device: ", "Fits, with"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "\"" << want << "\" not in:\n" << r.out;
}

TEST_F(PlanCli, PrintsThePlanWithoutData) {
  const auto r = test::run_app({"--batch", "--model", kModel.string(), "--plan", "--batch-size", "2", "--seq-len", "256"});
  expect_table(r);
  EXPECT_NE(r.out.find("batches of 2 x 256 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without --data"), std::string::npos) << r.out;
}

TEST_F(PlanCli, PrintsTheRunsOwnPlanWithData) {
  const auto out = dir_ / "run";
  const auto r = test::run_app({"--batch", "--model", kModel.string(), "--data", (dir_ / "data.jsonl").string(), "--out",
                                out.string(), "--store", (dir_ / "runs.sqlite").string(), "--plan", "--seq-len", "512",
                                "--grad-checkpoint"});
  expect_table(r);
  EXPECT_NE(r.out.find("batches of 1 x 64 tokens"), std::string::npos) << "T from the data's longest row: " << r.out;
  EXPECT_NE(r.out.find("--grad-checkpoint"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out)) << "--plan trains nothing";
}

TEST_F(PlanCli, RunOverTheBudgetFailsSayingWhatToChange) {
  ::setenv("LORASTUDIO_DEVICE_MEMORY_BUDGET", "128K", 1);
  const auto out = dir_ / "run";
  const auto r = test::run_app({"--batch", "--model", kModel.string(), "--data", (dir_ / "data.jsonl").string(), "--out",
                                out.string(), "--store", (dir_ / "runs.sqlite").string(), "--steps", "2",
                                "--batch-size", "4"});
  ::unsetenv("LORASTUDIO_DEVICE_MEMORY_BUDGET");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  for (const char* want : {"not enough GPU memory: this run needs", "has 128.0 KiB available",
                           "LORASTUDIO_DEVICE_MEMORY_BUDGET", "--batch-size 1", "saves"})
    EXPECT_NE(r.err.find(want), std::string::npos) << "\"" << want << "\" not in: " << r.err;
  EXPECT_FALSE(fs::exists(out / "adapter")) << "nothing trained";
}

TEST_F(PlanCli, BadBudgetIsNamed) {
  ::setenv("LORASTUDIO_DEVICE_MEMORY_BUDGET", "lots", 1);
  const auto r = test::run_app({"--batch", "--model", kModel.string(), "--plan"});
  ::unsetenv("LORASTUDIO_DEVICE_MEMORY_BUDGET");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("LORASTUDIO_DEVICE_MEMORY_BUDGET=\"lots\" is not a size"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ls
