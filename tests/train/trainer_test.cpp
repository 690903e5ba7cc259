// Checkpoint and resume (train/trainer.h): a run stopped after step 3 and resumed from its checkpoint
// gives, for every later step, the same loss, to the last bit, as the run that was never interrupted
// (same device), and the same final adapter bytes. Also: --batch's data errors and a bad checkpoint.
#include <filesystem>
#include <fstream>

#include "error.h"
#include "support/testing.h"
#include "train/trainer.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

class Resume : public test::GpuTest {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_resume_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "data.jsonl")
        << R"({"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": "Paris."}]})"
        << "\n"
        << R"({"prompt": "Say hi:", "completion": " hello there"})" << "\n"
        << R"({"text": "The quick brown fox jumps over the lazy dog."})" << "\n"
        << R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})" << "\n";
    config_.model = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
    config_.data = dir_ / "data.jsonl";
    config_.store = dir_ / "runs.sqlite";
    config_.targets = {model::LoraTarget::q_proj, model::LoraTarget::v_proj, model::LoraTarget::down_proj};
    config_.rank = 4;
    config_.batch_size = 1;
    config_.steps = 6;
    config_.save_every = 3;
    config_.schedule.lr = 5e-3f;
    config_.schedule.kind = train::ScheduleOptions::Cosine;
    config_.schedule.warmup_steps = 1;
    config_.optimizer.weight_decay = 0.01f;
  }
  void TearDown() override {
    fs::remove_all(dir_);
    test::GpuTest::TearDown();
  }
  std::vector<std::pair<uint32_t, double>> run(train::TrainConfig c) {
    std::vector<std::pair<uint32_t, double>> losses;
    train::train(dev(), c, [&](const train::StepReport& r) {
      losses.emplace_back(r.step, r.loss);
      return true;
    });
    return losses;
  }
  static std::string bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir_;
  train::TrainConfig config_;
};

TEST_F(Resume, ResumedRunMatchesUninterruptedBitForBit) {
  auto a = config_;
  a.out = dir_ / "a";
  const auto full = run(a);
  ASSERT_EQ(full.size(), 6u);
  ASSERT_TRUE(fs::exists(a.out / "checkpoint-3" / "trainer_state.json"));
  auto b = config_;
  b.out = dir_ / "b";
  b.resume = a.out / "checkpoint-3";
  const auto resumed = run(b);
  ASSERT_EQ(resumed.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(resumed[i].first, full[i + 3].first);
    EXPECT_EQ(resumed[i].second, full[i + 3].second) << "step " << resumed[i].first;  // bit for bit
  }
  EXPECT_EQ(bytes(b.out / "adapter" / "adapter_model.safetensors"), bytes(a.out / "adapter" / "adapter_model.safetensors"));
}

TEST_F(Resume, BadCheckpointIsNamed) {
  auto c = config_;
  c.out = dir_ / "c";
  c.resume = dir_ / "nope";
  try {
    run(c);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ls
