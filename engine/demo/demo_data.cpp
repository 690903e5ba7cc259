#include "demo/demo_data.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "demo/demo_assets.h"
#include "error.h"
#include "util/atomic_file.h"

namespace ls::demo {

namespace fs = std::filesystem;

namespace {

void write_if_different(const fs::path& path, const std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str() == bytes) return;
  }
  write_file_atomically(path, bytes);
}

}  // namespace

DemoData ensure_demo_data(const fs::path& root) {
  const fs::path dir = root / "demo-data";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create the folder (" + ec.message() + ")");
  DemoData d{dir / "demo_train.jsonl", dir / "demo_val.jsonl"};
  write_if_different(d.train, demo_train_jsonl());
  write_if_different(d.validation, demo_val_jsonl());
  return d;
}

std::vector<DemoPrompt> demo_prompts(size_t count) {
  std::vector<DemoPrompt> prompts;
  std::istringstream in(demo_val_jsonl());
  for (std::string line; prompts.size() < count && std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    const auto& m = j.at("messages");
    prompts.push_back({m.at(0).at("content").get<std::string>(), m.at(1).at("content").get<std::string>()});
  }
  return prompts;
}

train::TrainConfig demo_train_config(const fs::path& model_dir, const DemoData& data, uint32_t steps) {
  train::TrainConfig c;
  c.model = model_dir;
  c.data = data.train;
  c.data_options.validation_file = data.validation;
  c.data_options.max_seq_len = 128;  // every example has at most 64 tokens: batches are [6, 64]
  c.data_options.epochs = 2;         // 70 steps of 6 take 1.6 epochs; the steps decide
  c.steps = steps;
  c.targets = {model::LoraTarget::q_proj,    model::LoraTarget::k_proj,  model::LoraTarget::v_proj,
               model::LoraTarget::o_proj,    model::LoraTarget::gate_proj, model::LoraTarget::up_proj,
               model::LoraTarget::down_proj};
  c.rank = 16;
  c.alpha = 32;
  c.batch_size = 6;
  c.schedule.lr = 1e-2f;
  c.schedule.kind = train::ScheduleOptions::Linear;
  c.val_every = 0;
  return c;
}

}  // namespace ls::demo
