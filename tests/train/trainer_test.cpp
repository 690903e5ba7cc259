// The training loop (train/trainer.h) on the tiny Qwen2 fixture:
// - checkpoint and resume: a run resumed from its step-3 checkpoint gives, for every later step, the
//   same loss, to the last bit, as the run that was never interrupted (same device), and the same
//   final adapter bytes; a missing checkpoint is named; the same with LoRA dropout, which changes the
//   losses after step 1;
// - gradient accumulation: two micro-batches of the same example average to that example's gradient,
//   so the losses equal a run on the single example without accumulation;
// - validation: held-out examples get a finite validation loss every val_every steps and at the end;
// - a batch larger than the data set (rows repeat in it) trains;
// - the run store: a run cut off after step 5 and resumed from its step-3 checkpoint in its own folder
//   continues its entry (same id, one series of steps 1..6 equal to an uninterrupted run's, finished, a
//   "resumed" event at step 3); resumed into another folder it gets a new entry that starts with a copy of
//   steps 1..3; with another store, a new entry whose note says the checkpoint's run is not there; what a
//   killed writer left (temporary files, partial checkpoint folders) is removed when a run starts;
// - divergence: a learning rate of 1e30 makes a later step's loss or gradients NaN or infinite; the run
//   stops at that step with a message naming it, the weights never see the non-finite update (the adapter
//   saved is finite and equals the one a run stopped one step earlier saves), and the run is marked failed;
//   with --on-nonfinite skip the same run finishes: the non-finite steps are reported as skipped, stored as
//   "skipped" events and not as metrics, leave the adapter as it was, and 20 of them in a row stop the run;
// - a lost device (VK_ERROR_DEVICE_LOST, simulated: lavapipe cannot lose its device) during step 4 fails the
//   run with a message naming the step and the latest checkpoint to --resume from, and that resume finishes;
// - steering through a RunControl: a run paused after step 2 holds there, shows as paused in its run store
//   with its heartbeat refreshed, and when resumed is running again and finishes all its steps; a stop asked
//   while paused ends the run after that step, stopped, with a checkpoint of that step.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "error.h"
#include "support/testing.h"
#include "store/run_store.h"
#include "train/checkpoint.h"
#include "train/run_control.h"
#include "train/trainer.h"
#include "vk/device_lost.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

class TrainerLoop : public test::GpuTest {
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
  // Runs c for its 6 steps, then again from its step-3 checkpoint: every later loss and the final adapter
  // bytes must be the same, bit for bit. Returns the uninterrupted run's losses.
  std::vector<std::pair<uint32_t, double>> expect_resume_exact(const train::TrainConfig& c, const std::string& tag = "") {
    auto a = c;
    a.out = dir_ / (tag + "a");
    const auto full = run(a);
    EXPECT_EQ(full.size(), 6u);
    EXPECT_TRUE(fs::exists(a.out / "checkpoint-3" / "trainer_state.json"));
    auto b = c;
    b.out = dir_ / (tag + "b");
    b.resume = a.out / "checkpoint-3";
    const auto resumed = run(b);
    EXPECT_EQ(resumed.size(), 3u);
    for (size_t i = 0; i < resumed.size() && i + 3 < full.size(); ++i) {
      EXPECT_EQ(resumed[i].first, full[i + 3].first);
      EXPECT_EQ(resumed[i].second, full[i + 3].second) << "step " << resumed[i].first;  // bit for bit
    }
    EXPECT_EQ(bytes(b.out / "adapter" / "adapter_model.safetensors"),
              bytes(a.out / "adapter" / "adapter_model.safetensors"));
    // Another folder: a new entry, whose curve starts with a's steps 1..3.
    store::RunStore runs(c.store);
    const auto listed = runs.list_runs();
    const auto a_run = std::find_if(listed.begin(), listed.end(), [&](const auto& r) { return r.out_dir == a.out; });
    const auto b_run = std::find_if(listed.begin(), listed.end(), [&](const auto& r) { return r.out_dir == b.out; });
    EXPECT_TRUE(a_run != listed.end() && b_run != listed.end() && a_run->id != b_run->id);
    if (a_run != listed.end() && b_run != listed.end()) {
      EXPECT_EQ(losses_of(runs, b_run->id), full);
      EXPECT_NE(b_run->notes.find("checkpoint of run " + std::to_string(a_run->id)), std::string::npos) << b_run->notes;
      EXPECT_EQ(a_run->notes, "");
      EXPECT_EQ(losses_of(runs, a_run->id), full);
    }
    return full;
  }
  static std::vector<std::pair<uint32_t, double>> losses_of(const store::RunStore& runs, int64_t run) {
    std::vector<std::pair<uint32_t, double>> out;
    for (const auto& m : runs.metrics(run)) out.emplace_back(uint32_t(m.step), m.loss);
    return out;
  }
  fs::path dir_;
  train::TrainConfig config_;
};

TEST_F(TrainerLoop, ResumedRunMatchesUninterruptedBitForBit) { expect_resume_exact(config_); }

// With LoRA dropout the masks come from the seed and the micro-batch's number, so resuming is still
// exact; and dropout changes training: not while B = 0 makes the adapter's term vanish (steps 1 and 2:
// the one warmup step has lr 0), but from step 3 on.
TEST_F(TrainerLoop, DropoutKeepsResumeExactAndChangesTraining) {
  auto c = config_;
  c.dropout = 0.3f;
  const auto with = expect_resume_exact(c, "dropout-");
  auto plain = config_;
  plain.out = dir_ / "plain";
  const auto without = run(plain);
  ASSERT_EQ(with.size(), without.size());
  EXPECT_EQ(with[0].second, without[0].second);
  EXPECT_EQ(with[1].second, without[1].second);
  for (size_t i = 2; i < with.size(); ++i)
    EXPECT_NE(with[i].second, without[i].second) << "step " << with[i].first << ": dropout changed nothing";
}

TEST_F(TrainerLoop, BadCheckpointIsNamed) {
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

TEST_F(TrainerLoop, GradientAccumulationAveragesMicroBatches) {
  std::ofstream(dir_ / "one.jsonl")
      << R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})" << "\n";
  std::ofstream(dir_ / "two.jsonl")
      << R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})" << "\n"
      << R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})" << "\n";
  auto single = config_;
  single.data = dir_ / "one.jsonl";
  single.out = dir_ / "single";
  single.steps = 4;
  single.save_every = 0;
  auto accum = single;
  accum.data = dir_ / "two.jsonl";
  accum.out = dir_ / "accum";
  accum.grad_accum = 2;
  // No clipping and a large eps, so that the update depends on the gradient's scale (clipping and
  // AdamW's m / sqrt(v) would otherwise hide a missing 1 / micro-batches factor).
  single.optimizer.max_grad_norm = accum.optimizer.max_grad_norm = 0.0f;
  single.optimizer.eps = accum.optimizer.eps = 0.1f;
  const auto a = run(single), b = run(accum);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i].second, a[i].second, 1e-6 * a[i].second) << "step " << i + 1;
  EXPECT_LT(a.back().second, a.front().second);
}

TEST_F(TrainerLoop, ValidationLossAtIntervalsAndAtTheEnd) {
  auto c = config_;
  c.out = dir_ / "val";
  c.save_every = 0;
  c.val_every = 2;
  c.steps = 5;
  c.data_options.validation_fraction = 0.25;  // one of the four examples
  std::vector<std::optional<double>> val;
  train::train(dev(), c, [&](const train::StepReport& r) {
    val.push_back(r.val_loss);
    return true;
  });
  ASSERT_EQ(val.size(), 5u);
  for (size_t i = 0; i < val.size(); ++i) {
    const bool want = (i + 1) % 2 == 0 || i + 1 == 5;
    EXPECT_EQ(val[i].has_value(), want) << "step " << i + 1;
    if (val[i]) {
      EXPECT_TRUE(std::isfinite(*val[i]) && *val[i] > 0) << *val[i];
    }
  }
}

// Profiling: every step reports GPU time for each op group, all of them used by this configuration
// (q, v and down_proj adapted), and the run store keeps them with the step's metrics.
TEST_F(TrainerLoop, ProfiledStepsReportGpuTimePerOpGroup) {
  auto c = config_;
  c.out = dir_ / "profiled";
  c.save_every = 0;
  c.steps = 2;
  c.profile = true;
  std::vector<std::vector<store::GpuTime>> seen;
  train::train(dev(), c, [&](const train::StepReport& r) {
    seen.push_back(r.gpu_ms);
    return true;
  });
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& groups : seen) {
    std::vector<std::string> names;
    for (const auto& g : groups) {
      names.push_back(g.group);
      EXPECT_GT(g.ms, 0.0) << g.group;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"embedding", "norms", "attention", "mlp", "lora", "loss", "optimizer"}));
  }
  store::RunStore runs(c.store);
  const auto rows = runs.metrics(runs.list_runs().front().id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.back().gpu_ms, seen.back());
}

// A batch larger than the data set holds rows more than once (it runs into the next epoch): the step's
// loss, which runs over the rows with a target only, has room for all of them.
TEST_F(TrainerLoop, BatchLargerThanTheDataSet) {
  auto c = config_;
  c.batch_size = 7;  // 4 examples: each batch holds some twice
  c.steps = 2;
  c.save_every = 0;
  c.out = dir_ / "big-batch";
  const auto losses = run(c);
  ASSERT_EQ(losses.size(), 2u);
  for (const auto& [step, loss] : losses) EXPECT_TRUE(std::isfinite(loss)) << step;
}

// Paths given relative to the working folder are recorded from the root, in config.json and the store: the
// app and `export --trl` read them from other folders. A trailing separator does not empty the run's name.
TEST_F(TrainerLoop, RelativePathsAreRecordedFromTheRoot) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_);
  auto c = config_;
  c.data = "./data.jsonl";
  c.out = "runs/../rel-run/";
  c.steps = 1;
  c.save_every = 0;
  run(c);
  fs::current_path(before);
  store::RunStore runs(c.store);
  const auto listed = runs.list_runs();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].data_path, dir_ / "data.jsonl");
  EXPECT_EQ(listed[0].out_dir, dir_ / "rel-run");
  EXPECT_EQ(listed[0].name, "rel-run");
  const auto config = nlohmann::json::parse(bytes(dir_ / "rel-run" / "config.json"));
  EXPECT_EQ(config["data"], (dir_ / "data.jsonl").string()) << config.dump(2);
}

// A run that dies after step 5 (the callback throws: the entry is marked failed, steps 1..5 logged) and is
// resumed from checkpoint-3 in its own folder continues its entry.
TEST_F(TrainerLoop, NonFiniteLossOrGradientStopsBeforeTheWeights) {
  auto c = config_;
  c.schedule.lr = 1e30f;
  c.schedule.warmup_steps = 0;
  c.save_every = 0;
  c.out = dir_ / "diverged";
  uint32_t last_step = 0;
  std::string message;
  try {
    train::train(dev(), c, [&](const train::StepReport& r) {
      last_step = r.step;
      return true;
    });
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_NE(message, "") << "a run at lr 1e30 finished all " << c.steps << " steps";
  const uint32_t bad = last_step + 1;  // the step that stopped the run reported nothing
  EXPECT_NE(message.find("step " + std::to_string(bad) + ": "), std::string::npos) << message;
  EXPECT_NE(message.find("its update was not applied"), std::string::npos) << message;
  EXPECT_NE(message.find("as of step " + std::to_string(last_step)), std::string::npos) << message;
  const fs::path saved = c.out / "adapter" / "adapter_model.safetensors";
  ASSERT_TRUE(fs::exists(saved)) << message;

  // The same run stopped after step last_step by its caller saves the same bytes: nothing of the bad step
  // reached the weights.
  auto stopped = c;
  stopped.out = dir_ / "stopped";
  train::train(dev(), stopped, [&](const train::StepReport& r) { return r.step < last_step; });
  EXPECT_EQ(bytes(saved), bytes(stopped.out / "adapter" / "adapter_model.safetensors"));

  store::RunStore runs(c.store);
  const auto listed = runs.list_runs();
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& r) { return r.out_dir == c.out; });
  ASSERT_TRUE(it != listed.end());
  EXPECT_EQ(it->status, store::RunStatus::failed);
  EXPECT_EQ(it->error, message);
  EXPECT_EQ(runs.metrics(it->id).size(), size_t(last_step));
}

TEST_F(TrainerLoop, NonFiniteStepsAreSkippedWhenAsked) {
  auto c = config_;
  c.schedule.lr = 1e30f;
  c.schedule.warmup_steps = 0;
  c.save_every = 0;
  c.on_non_finite = train::NonFinitePolicy::skip;
  c.out = dir_ / "skipping";
  std::vector<train::StepReport> reports;
  const auto result = train::train(dev(), c, [&](const train::StepReport& r) {
    reports.push_back(r);
    return true;
  });
  ASSERT_EQ(reports.size(), size_t(c.steps));
  uint32_t last_applied = 0, skipped = 0;
  for (const auto& r : reports) {
    if (!r.skipped) {
      EXPECT_EQ(skipped, 0u) << "step " << r.step << " applied after a skipped step (at lr 1e30 none should be)";
      last_applied = r.step;
      continue;
    }
    ++skipped;
    EXPECT_FALSE(std::isfinite(r.loss) && std::isfinite(r.grad_norm)) << "step " << r.step;
    EXPECT_TRUE(r.skip_reason.starts_with("the loss is ") || r.skip_reason.starts_with("the gradients' norm is "))
        << r.skip_reason;
  }
  ASSERT_GT(skipped, 0u) << "no step at lr 1e30 went non-finite";
  ASSERT_GT(last_applied, 0u);
  EXPECT_EQ(result.skipped_steps, skipped);
  EXPECT_EQ(result.steps, c.steps);

  // The skipped steps left the weights as the last applied step made them.
  auto stopped = c;
  stopped.out = dir_ / "stopped";
  train::train(dev(), stopped, [&](const train::StepReport& r) { return r.step < last_applied; });
  EXPECT_EQ(bytes(c.out / "adapter" / "adapter_model.safetensors"),
            bytes(stopped.out / "adapter" / "adapter_model.safetensors"));

  store::RunStore runs(c.store);
  const auto listed = runs.list_runs();
  const auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& r) { return r.out_dir == c.out; });
  ASSERT_TRUE(it != listed.end());
  EXPECT_EQ(it->status, store::RunStatus::finished);
  EXPECT_EQ(runs.metrics(it->id).size(), size_t(last_applied));  // no row for a skipped step
  std::vector<int64_t> event_steps;
  for (const auto& e : runs.events(it->id))
    if (e.kind == store::kEventSkipped) {
      event_steps.push_back(e.step.value_or(-1));
      EXPECT_NE(e.message.find("skipped: the "), std::string::npos) << e.message;
    }
  ASSERT_EQ(event_steps.size(), size_t(skipped));
  EXPECT_EQ(event_steps.front(), int64_t(last_applied + 1));

  // A run that does nothing but skip stops as --on-nonfinite stop would, saying why.
  auto stuck = c;
  stuck.out = dir_ / "stuck";
  stuck.steps = train::kMaxConsecutiveSkips + 5;
  std::string message;
  try {
    train::train(dev(), stuck, [](const train::StepReport&) { return true; });
  } catch (const Error& e) {
    message = e.what();
  }
  const std::string bad = std::to_string(last_applied + train::kMaxConsecutiveSkips);
  EXPECT_NE(message.find("step " + bad + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(train::kMaxConsecutiveSkips) + " steps in a row were not finite"),
            std::string::npos) << message;
}

TEST_F(TrainerLoop, LostDeviceNamesTheStepAndTheCheckpointToResumeFrom) {
  struct LoseTheDevice {  // turned off however the test ends
    void after(uint64_t submits) { vk::simulate_device_loss_after(submits); }
    ~LoseTheDevice() { vk::simulate_device_loss_after(std::nullopt); }
  } lose;
  auto c = config_;
  c.save_every = 2;
  c.out = dir_ / "lost";
  std::string message;
  try {
    train::train(dev(), c, [&](const train::StepReport& r) {
      if (r.step == 3) lose.after(0);  // the first submission of step 4 meets a lost device
      return true;
    });
  } catch (const Error& e) {
    message = e.what();
  }
  vk::simulate_device_loss_after(std::nullopt);
  const fs::path checkpoint = c.out / "checkpoint-2";
  EXPECT_NE(message.find("step 4 of 6: "), std::string::npos) << message;
  EXPECT_NE(message.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << message;
  EXPECT_NE(message.find("continue with --resume " + checkpoint.string()), std::string::npos) << message;
  store::RunStore runs(c.store);
  ASSERT_EQ(runs.list_runs().size(), 1u);
  EXPECT_EQ(runs.list_runs().front().status, store::RunStatus::failed);
  EXPECT_EQ(runs.list_runs().front().error, message);

  c.resume = checkpoint;
  const auto resumed = run(c);
  ASSERT_EQ(resumed.size(), 4u);
  EXPECT_EQ(resumed.front().first, 3u);
}

TEST_F(TrainerLoop, ResumeInItsOwnFolderContinuesTheRunEntry) {
  auto plain = config_;
  plain.out = dir_ / "plain";
  plain.store = dir_ / "plain.sqlite";
  const auto full = run(plain);
  ASSERT_EQ(full.size(), 6u);

  auto c = config_;
  c.out = dir_ / "cut";
  EXPECT_THROW(train::train(dev(), c, [](const train::StepReport& r) {
                 if (r.step == 5) throw Error("cut off");
                 return true;
               }), Error);
  store::RunStore runs(c.store);
  ASSERT_EQ(runs.list_runs().size(), 1u);
  const int64_t id = runs.list_runs().front().id;
  EXPECT_EQ(runs.run(id).status, store::RunStatus::failed);
  EXPECT_EQ(runs.metrics(id).size(), 5u);

  c.resume = c.out / "checkpoint-3";
  const auto resumed = run(c);
  ASSERT_EQ(resumed.size(), 3u);
  const auto listed = runs.list_runs();
  ASSERT_EQ(listed.size(), 1u) << "no second entry";
  EXPECT_EQ(listed.front().id, id);
  EXPECT_EQ(listed.front().status, store::RunStatus::finished);
  EXPECT_EQ(listed.front().error, "");
  EXPECT_EQ(losses_of(runs, id), full) << "one series, steps 4 and 5 of the cut-off attempt replaced";
  const auto events = runs.events(id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, store::kEventResumed);
  EXPECT_EQ(events[0].step, 3);
  EXPECT_NE(events[0].message.find("resumed at step 3"), std::string::npos) << events[0].message;
  EXPECT_EQ(bytes(c.out / "adapter" / "adapter_model.safetensors"),
            bytes(plain.out / "adapter" / "adapter_model.safetensors"));
  // The checkpoint names its entry.
  EXPECT_EQ(train::read_checkpoint_state(c.out / "checkpoint-3").run_id, id);
}

// The checkpoint's entry is in another store: a new entry in this one, with a note saying so.
TEST_F(TrainerLoop, ResumeWithAnotherStoreMakesANewEntryWithANote) {
  auto c = config_;
  c.out = dir_ / "x";
  run(c);
  c.resume = c.out / "checkpoint-3";
  c.store = dir_ / "other.sqlite";
  EXPECT_EQ(run(c).size(), 3u);
  store::RunStore other(c.store);
  const auto listed = other.list_runs();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed.front().status, store::RunStatus::finished);
  EXPECT_NE(listed.front().notes.find("is not in this store"), std::string::npos) << listed.front().notes;
  EXPECT_EQ(other.metrics(listed.front().id).size(), 3u);
  EXPECT_EQ(store::RunStore(config_.store).list_runs().size(), 1u) << "the first store is left alone";
}

// Leftovers of a writer that died (its pid no longer runs) go; a live writer's stay.
TEST_F(TrainerLoop, LeftoversOfAKilledWriterAreRemoved) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string dead = std::to_string(child), live = std::to_string(getpid());
  auto c = config_;
  c.out = dir_ / "left";
  c.steps = 2;
  c.save_every = 0;
  fs::create_directories(c.out / ("checkpoint-4.partial." + dead));
  std::ofstream(c.out / ("checkpoint-4.partial." + dead) / "adapter_config.json") << "{";
  fs::create_directories(c.out / "adapter");
  std::ofstream(c.out / "adapter" / ("adapter_model.safetensors.tmp." + dead)) << "x";
  std::ofstream(c.out / ("metrics.csv.tmp." + dead)) << "x";
  std::ofstream(c.out / ("notes.tmp." + live)) << "x";
  run(c);
  EXPECT_FALSE(fs::exists(c.out / ("checkpoint-4.partial." + dead)));
  EXPECT_FALSE(fs::exists(c.out / "adapter" / ("adapter_model.safetensors.tmp." + dead)));
  EXPECT_FALSE(fs::exists(c.out / ("metrics.csv.tmp." + dead)));
  EXPECT_TRUE(fs::exists(c.out / ("notes.tmp." + live))) << "a live process's file stays";
  EXPECT_TRUE(fs::exists(c.out / "adapter" / "adapter_model.safetensors"));
}

// Pauses the run after step 2 and, on another thread, waits until the run store shows it paused, watches its
// heartbeat move on while it holds, then calls `then` (resume or stop). Returns what that thread saw.
struct PauseSeen {
  store::RunStatus status = store::RunStatus::created;
  double heartbeat_before = 0, heartbeat_after = 0;
  std::vector<bool> told;  // RunControl's on_paused calls, in order
  train::TrainResult result;
};
PauseSeen pause_after_step_2(vk::Device& dev, const train::TrainConfig& c, void (train::RunControl::*then)()) {
  PauseSeen seen;
  train::RunControl control([&](bool paused) { seen.told.push_back(paused); });
  control.interval = std::chrono::milliseconds(20);
  std::thread steer;
  seen.result = train::train(dev, c, [&](const train::StepReport& r) {
    if (r.step != 2) return true;
    control.pause();
    steer = std::thread([&, id = r.run_id] {
      store::RunStore runs(c.store);
      for (int i = 0; i < 1000 && runs.run(id).status != store::RunStatus::paused; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      seen.status = runs.run(id).status;
      seen.heartbeat_before = runs.run(id).heartbeat_at.value_or(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      seen.heartbeat_after = runs.run(id).heartbeat_at.value_or(0);
      (control.*then)();
    });
    return true;
  }, &control);
  steer.join();
  return seen;
}

TEST_F(TrainerLoop, PausedRunHoldsMarkedPausedUntilResumed) {
  auto c = config_;
  c.out = dir_ / "paused";
  const PauseSeen seen = pause_after_step_2(dev(), c, &train::RunControl::resume);
  EXPECT_EQ(seen.status, store::RunStatus::paused);
  EXPECT_GT(seen.heartbeat_after, seen.heartbeat_before) << "no heartbeat while paused";
  EXPECT_EQ(seen.told, (std::vector<bool>{true, false}));
  EXPECT_EQ(seen.result.steps, 6u);
  EXPECT_FALSE(seen.result.stopped);
  store::RunStore runs(c.store);
  EXPECT_EQ(runs.run(seen.result.run_id).status, store::RunStatus::finished);
  EXPECT_EQ(runs.metrics(seen.result.run_id).size(), 6u);
}

TEST_F(TrainerLoop, StopWhilePausedStopsAfterThatStepWithACheckpoint) {
  auto c = config_;
  c.out = dir_ / "paused_then_stopped";
  const PauseSeen seen = pause_after_step_2(dev(), c, &train::RunControl::stop);
  EXPECT_EQ(seen.status, store::RunStatus::paused);
  EXPECT_EQ(seen.told, (std::vector<bool>{true, false}));
  EXPECT_EQ(seen.result.steps, 2u);
  EXPECT_TRUE(seen.result.stopped);
  store::RunStore runs(c.store);
  EXPECT_EQ(runs.run(seen.result.run_id).status, store::RunStatus::stopped);
  const auto latest = runs.latest_checkpoint(seen.result.run_id);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 2);
  EXPECT_TRUE(fs::exists(train::checkpoint_dir(c.out, 2)));
}

}  // namespace
}  // namespace ls
