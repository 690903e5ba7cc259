#include "train/checkpoint.h"

#include <limits>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "util/atomic_file.h"

namespace ls::train {

namespace fs = std::filesystem;
using model::LoraAdapter;

namespace {

void fsync_folder(const fs::path& dir) {
  const int fd = ::open((dir.empty() ? fs::path(".") : dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_moments(const fs::path& file, const LoraAdapter& adapter, const LoraAdapter& m1, const LoraAdapter& m2) {
  // Keyed like the adapter's matrices, with .exp_avg / .exp_avg_sq appended.
  std::vector<std::vector<float>> values;
  std::vector<model::TensorToWrite> tensors;
  for (size_t i = 0; i < adapter.layers.size(); ++i)
    for (size_t t = 0; t < model::kLoraTargetCount; ++t) {
      if (!adapter.layers[i][t].defined()) continue;
      for (int which = 0; which < 4; ++which) {
        const auto& src = (which < 2 ? m1 : m2).layers[i][t];
        const Tensor& tensor = which % 2 == 0 ? src.a : src.b;
        values.push_back(download(tensor));
        std::string key =
            model::peft_key(i, model::LoraTarget(t), which % 2 == 1) + (which < 2 ? ".exp_avg" : ".exp_avg_sq");
        std::vector<uint64_t> shape(tensor.shape().begin(), tensor.shape().end());
        tensors.push_back({key, DType::f32, shape, {}});
      }
    }
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].bytes = std::as_bytes(std::span<const float>(values[i]));
  model::write_safetensors(file, tensors);
}

// The pid in "<name>.tmp.<pid>" or "<name>.partial.<pid>", if the name has that form.
std::optional<pid_t> writer_pid(const std::string& name) {
  for (const std::string_view mark : {".tmp.", ".partial."}) {
    const size_t at = name.rfind(mark);
    if (at == std::string::npos || at == 0) continue;
    const char* first = name.data() + at + mark.size();
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(first, last, pid);
    if (ec == std::errc() && end == last && first != last && pid > 0) return pid;
  }
  return std::nullopt;
}

bool process_alive(pid_t pid) { return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

fs::path checkpoint_dir(const fs::path& out, uint32_t step) { return out / ("checkpoint-" + std::to_string(step)); }

void write_checkpoint(const fs::path& out, uint32_t step, const LoraAdapter& adapter, const LoraAdapter& m1,
                      const LoraAdapter& m2, const model::ModelConfig& mc, const fs::path& model_path,
                      const BatcherState& data, const CheckpointState& state) {
  const fs::path dir = checkpoint_dir(out, step);
  fs::path tmp = dir;
  tmp += ".partial." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec))
    throw Error(tmp.string() + ": cannot create the checkpoint folder (" + (ec ? ec.message() : "it exists") + ")");
  try {
    model::save_peft_adapter(adapter, mc, tmp, model_path.string());
    write_moments(tmp / "optimizer.safetensors", adapter, m1, m2);
    nlohmann::json j = {{"step", step}, {"data", nlohmann::json::parse(data.to_json())}};
    if (state.run_id) j["run_id"] = *state.run_id;
    if (!state.store.empty()) j["store"] = state.store.string();
    write_file_atomically(tmp / "trainer_state.json", j.dump(2));
    // A folder of this name is from an attempt that went past this step and was cut off or resumed from an
    // earlier checkpoint: this one replaces it (rename cannot replace a folder that has files).
    if (fs::exists(dir, ec)) fs::remove_all(dir, ec);
    if (ec) throw Error(dir.string() + ": cannot replace the older checkpoint (" + ec.message() + ")");
    fs::rename(tmp, dir, ec);
    if (ec) throw Error(dir.string() + ": cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fsync_folder(out);
}

CheckpointState read_checkpoint_state(const fs::path& dir) {
  const fs::path state_path = dir / "trainer_state.json";
  std::ifstream in(state_path);
  if (!in) throw Error(state_path.string() + ": cannot open (is " + dir.string() + " a checkpoint folder?)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(state_path.string() + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_unsigned() || !j.contains("data"))
    throw Error(state_path.string() + ": missing \"step\" or \"data\"");
  CheckpointState s;
  if (j["step"].get<uint64_t>() > std::numeric_limits<uint32_t>::max())
    throw Error(state_path.string() + ": \"step\" " + j["step"].dump() + " is past the largest step count");
  s.step = uint32_t(j["step"].get<uint64_t>());
  if (j.contains("run_id")) {
    if (!j["run_id"].is_number_integer()) throw Error(state_path.string() + ": \"run_id\" is not an integer");
    s.run_id = j["run_id"].get<int64_t>();
  }
  if (j.contains("store") && j["store"].is_string()) s.store = j["store"].get<std::string>();
  return s;
}

uint32_t load_checkpoint(vk::Device& dev, const fs::path& dir, const model::ModelConfig& mc, LoraAdapter& adapter,
                         LoraAdapter& m1, LoraAdapter& m2, Batcher& batcher) {
  const CheckpointState state = read_checkpoint_state(dir);
  const fs::path state_path = dir / "trainer_state.json";
  const LoraAdapter saved = model::load_peft_adapter(dev, mc, dir);
  if (saved.rank != adapter.rank || saved.targets.size() != adapter.targets.size())
    throw Error(dir.string() + ": the checkpoint's adapter (rank " + std::to_string(saved.rank) +
                ") does not match this run's options (rank " + std::to_string(adapter.rank) + ")");
  const model::SafeTensors moments = model::SafeTensors::open(dir / "optimizer.safetensors");
  for (size_t i = 0; i < adapter.layers.size(); ++i)
    for (size_t t = 0; t < model::kLoraTargetCount; ++t) {
      auto& p = adapter.layers[i][t];
      if (!p.defined()) continue;
      if (!saved.layers[i][t].defined())
        throw Error(dir.string() + ": the checkpoint has no " + std::string(model::target_name(model::LoraTarget(t))) +
                    " for layer " + std::to_string(i));
      upload(p.a, download(saved.layers[i][t].a));
      upload(p.b, download(saved.layers[i][t].b));
      for (int which = 0; which < 4; ++which) {
        const std::string key = model::peft_key(i, model::LoraTarget(t), which % 2 == 1) +
                                (which < 2 ? ".exp_avg" : ".exp_avg_sq");
        const auto& dst = (which < 2 ? m1 : m2).layers[i][t];
        const Tensor& tensor = which % 2 == 0 ? dst.a : dst.b;
        const auto& info = moments.at(key);
        if (info.dtype != DType::f32 || info.bytes.size() != tensor.bytes())
          throw Error((dir / "optimizer.safetensors").string() + ": \"" + key + "\" has the wrong shape or dtype");
        upload_bytes(tensor, {reinterpret_cast<const uint8_t*>(info.bytes.data()), info.bytes.size()});
      }
    }
  std::ifstream in(state_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  batcher.restore(BatcherState::from_json(j["data"].dump(), state_path.string()));
  return state.step;
}

int remove_interrupted_writes(const fs::path& out) {
  int removed = 0;
  std::error_code ec;
  auto sweep = [&](const fs::path& dir, bool descend) {
    std::vector<fs::path> subfolders, leftovers;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const auto pid = writer_pid(it->path().filename().string());
      if (pid && !process_alive(*pid))
        leftovers.push_back(it->path());
      else if (descend && it->is_directory(ec))
        subfolders.push_back(it->path());
    }
    for (const auto& p : leftovers) removed += fs::remove_all(p, ec) > 0 ? 1 : 0;
    return subfolders;
  };
  for (const auto& sub : sweep(out, true)) sweep(sub, false);
  return removed;
}

std::optional<fs::path> latest_checkpoint_in(const fs::path& out) {
  std::optional<fs::path> best;
  uint32_t best_step = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    constexpr std::string_view prefix = "checkpoint-";
    if (name.rfind(prefix, 0) != 0) continue;
    uint32_t step = 0;
    const char* last = name.data() + name.size();
    const auto [end, err] = std::from_chars(name.data() + prefix.size(), last, step);
    if (err != std::errc() || end != last) continue;  // e.g. checkpoint-7.partial.123
    if (!fs::exists(it->path() / "trainer_state.json", ec)) continue;
    if (!best || step > best_step) best = it->path(), best_step = step;
  }
  return best;
}

}  // namespace ls::train
