#pragma once
// The demo's data and how the demo trains on it. The data set (assets/demo, made by
// scripts/make_demo_data.py, built into the binary) teaches one skill a random model cannot have:
// every reply is one JSON object of a fixed shape that sorts the question,
// {"topic": "geography|arithmetic|words|...", "kind": "fact|estimate|unknowable"}, decided by the
// question's words, so that it carries over to questions training never saw. demo_val.jsonl is held
// out (no question of it is in demo_train.jsonl); its first lines are the questions the demo asks the
// base model and the adapter.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace ls::demo {

struct DemoData {
  std::filesystem::path train, validation;  // <root>/demo-data/demo_train.jsonl, demo_val.jsonl
};

// Writes the built-in data set into <root>/demo-data/ (atomically, each file only when it differs from
// the built-in one). Throws ls::Error naming the path when it cannot be written.
DemoData ensure_demo_data(const std::filesystem::path& root);

struct DemoPrompt {
  std::string question;  // the user message
  std::string expected;  // the held-out answer, in the learnt shape
};
// The first `count` examples of the held-out split.
std::vector<DemoPrompt> demo_prompts(size_t count = 3);

// Optimizer steps of the full demo (6 examples each, about 1.6 epochs): a few minutes on a CPU (lavapipe,
// 2 cores); afterwards the adapter answers held-out questions in the data's shape, mostly with the right
// topic (measured: 3 of the first 4 held-out questions).
inline constexpr uint32_t kDemoSteps = 70;

// The demo's training options for the demo model: LoRA r16 on every projection, batches of 6, lr 1e-2
// decaying linearly, the held-out split as validation data (its loss at the end). model, data,
// validation file and steps filled in; out and store left to the caller.
train::TrainConfig demo_train_config(const std::filesystem::path& model_dir, const DemoData& data, uint32_t steps);

}  // namespace ls::demo
