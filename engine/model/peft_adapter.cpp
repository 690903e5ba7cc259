#include "model/peft_adapter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/layer_spec.h"
#include "model/safetensors.h"
#include "tensor/tensor.h"
#include "util/atomic_file.h"
#include "util/decimal.h"
#include "util/json_keys.h"

namespace ls::model {

namespace {

bool is_attention(LoraTarget t) { return t <= LoraTarget::o_proj || t == LoraTarget::qkv_proj; }

// The layers the adapter adapts, checked against the model: each layer has all of the adapter's targets
// (f32 A [r, in], B [out, r]) or none of them, and no pair outside the targets.
std::vector<uint32_t> adapted_layers(const LoraAdapter& a, const ModelConfig& c, const std::string& where) {
  auto fail = [&](const std::string& what) { throw Error(where + ": " + what); };
  if (a.rank == 0) fail("the adapter's rank is 0");
  if (a.targets.empty()) fail("the adapter has no target modules");
  if (a.layers.size() != c.num_layers)
    fail("the adapter has " + std::to_string(a.layers.size()) + " layers; the model has " + std::to_string(c.num_layers));
  std::vector<uint32_t> layers;
  for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
    size_t defined = 0;
    for (size_t i = 0; i < kLoraTargetCount; ++i) {
      const LoraTarget t = LoraTarget(i);
      const LoraPair& p = a.layers[layer][i];
      const bool is_target = std::find(a.targets.begin(), a.targets.end(), t) != a.targets.end();
      const std::string name = std::string(target_name(t)) + " of layer " + std::to_string(layer);
      if (!p.defined()) continue;
      if (!is_target) fail(name + " has LoRA matrices but is not among the adapter's targets");
      const auto [out, in] = target_shape(c, t);
      if (!p.b.defined() || p.a.dtype() != DType::f32 || p.b.dtype() != DType::f32 || p.a.shape() != Shape{a.rank, in} ||
          p.b.shape() != Shape{out, a.rank})
        fail(name + " has A " + (p.a.defined() ? p.a.describe() : "none") + " and B " +
             (p.b.defined() ? p.b.describe() : "none") + "; expected A [" + std::to_string(a.rank) + ", " +
             std::to_string(in) + "] f32 and B [" + std::to_string(out) + ", " + std::to_string(a.rank) + "] f32");
      ++defined;
    }
    if (defined == a.targets.size()) layers.push_back(layer);
    else if (defined != 0)
      fail("layer " + std::to_string(layer) + " has " + std::to_string(defined) + " of the adapter's " +
           std::to_string(a.targets.size()) + " targets (PEFT's format adapts all targets of a layer or none)");
  }
  if (layers.empty()) fail("the adapter has no LoRA matrices");
  return layers;
}

// A float setting as PEFT would hold it: an integer when whole (lora_alpha = 16), else its shortest decimal.
nlohmann::json json_number(float f) {
  if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 0x1p53f) return int64_t(f);
  return decimal_double(f);
}

void fsync_folder(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string peft_config_json(const LoraAdapter& a, const ModelConfig& c, const std::string& base_model_name_or_path) {
  const std::vector<uint32_t> layers = adapted_layers(a, c, "adapter_config.json");
  std::vector<std::string> targets;
  for (LoraTarget t : a.targets) targets.emplace_back(target_name(t));
  std::sort(targets.begin(), targets.end());
  nlohmann::json j = nlohmann::json::object();  // keys sorted (std::map), as PEFT's sort_keys=True
  j["alpha_pattern"] = nlohmann::json::object();
  j["base_model_name_or_path"] =
      base_model_name_or_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(base_model_name_or_path);
  j["bias"] = "none";
  j["fan_in_fan_out"] = false;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["layers_to_transform"] = layers.size() == c.num_layers ? nlohmann::json(nullptr) : nlohmann::json(layers);
  j["lora_alpha"] = json_number(a.alpha);
  j["lora_dropout"] = decimal_double(a.dropout);
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = a.rank;
  j["rank_pattern"] = nlohmann::json::object();
  j["target_modules"] = targets;
  j["task_type"] = "CAUSAL_LM";
  j["use_dora"] = false;
  j["use_rslora"] = a.rslora;
  return j.dump(2);
}

void save_peft_adapter(const LoraAdapter& a, const ModelConfig& c, const std::filesystem::path& dir_in,
                       const std::string& base_model_name_or_path) {
  namespace fs = std::filesystem;
  fs::path dir = dir_in.lexically_normal();
  if (dir.has_parent_path() && !dir.has_filename()) dir = dir.parent_path();  // "out/adapter/"
  const std::string where = "save_peft_adapter: " + dir.string();
  auto fail = [&](const std::string& what) { throw Error(where + ": " + what); };

  const std::vector<uint32_t> layers = adapted_layers(a, c, where);
  const std::string config_text = peft_config_json(a, c, base_model_name_or_path);
  // Download every matrix first (vectors in their final place, so the byte spans below stay valid).
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  std::vector<Shape> shapes;
  for (uint32_t layer : layers) {
    for (LoraTarget t : a.targets) {
      const LoraPair& p = a.at(layer, t);
      for (bool b_matrix : {false, true}) {
        const Tensor& m = b_matrix ? p.b : p.a;
        names.push_back(peft_key(layer, t, b_matrix, c.weight_prefix));
        values.push_back(download(m));
        shapes.push_back(m.shape());
      }
    }
  }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < names.size(); ++i)
    tensors.push_back({.name = names[i],
                       .dtype = DType::f32,
                       .shape = std::vector<uint64_t>(shapes[i].begin(), shapes[i].end()),
                       .bytes = std::as_bytes(std::span<const float>(values[i]))});
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};  // as PEFT's safe_save_file

  // Both files go into a sibling folder first, so that a full disk (or any failure) on the way leaves `dir`
  // as it was: then the folder is renamed into place, or, for an existing `dir`, each file is (its other
  // files stay).
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  if (existed && !fs::is_directory(dir, ec)) fail("exists and is not a folder");
  if (!existed && dir.has_parent_path()) {
    fs::create_directories(dir.parent_path(), ec);
    if (ec) fail("cannot create the parent folder (" + ec.message() + ")");
  }
  fs::path tmp = dir;
  tmp += ".partial." + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) fail("cannot create " + tmp.string() + " (" + ec.message() + ")");
  try {
    write_safetensors(tmp / "adapter_model.safetensors", tensors, metadata);
    write_file_atomically(tmp / "adapter_config.json", config_text);
    if (existed) {
      for (const char* name : {"adapter_model.safetensors", "adapter_config.json"}) {
        fs::rename(tmp / name, dir / name, ec);
        if (ec) fail("cannot rename " + (tmp / name).string() + " into place (" + ec.message() + ")");
      }
      fs::remove_all(tmp, ec);
      fsync_folder(dir);
    } else {
      fs::rename(tmp, dir, ec);
      if (ec) fail("cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
    }
  } catch (const Error& e) {
    fs::remove_all(tmp, ec);
    throw Error(std::string(e.what()) + "; the adapter was not saved" +
                (existed ? " and " + dir.string() + " is as it was before" : ""));
  }
  fsync_folder(dir.parent_path());
}

std::string peft_key(size_t layer, LoraTarget target, bool b_matrix, const std::string& weight_prefix) {
  return "base_model.model." + weight_prefix + "layers." + std::to_string(layer) + (is_attention(target) ? ".self_attn." : ".mlp.") +
         std::string(target_name(target)) + (b_matrix ? ".lora_B.weight" : ".lora_A.weight");
}

std::optional<std::string> layer_prefix(std::string_view name) {
  constexpr std::string_view peft = "base_model.model.";
  if (name.starts_with(peft)) name.remove_prefix(peft.size());
  for (size_t at = name.find("layers."); at != std::string_view::npos; at = name.find("layers.", at + 1)) {
    if (at > 0 && name[at - 1] != '.') continue;
    const size_t digits = at + 7;
    size_t end = digits;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    if (end > digits && end < name.size() && name[end] == '.') return std::string(name.substr(0, at));
  }
  return std::nullopt;
}

void check_adapter_layer_prefix(const SafeTensors& adapter_weights, const std::string& model_prefix,
                                const std::string& model) {
  for (const TensorInfo& t : adapter_weights.tensors()) {
    const std::optional<std::string> prefix = layer_prefix(t.name);
    if (!prefix || *prefix == model_prefix) continue;
    throw Error(adapter_weights.path().string() + ": its matrices adapt layers named " + *prefix +
                "layers.N, and the model (" + model + ") names its layers " + model_prefix +
                "layers.N: the adapter was trained on another layout of the model (e.g. a Gemma3ForCausalLM "
                "folder's adapter on a Gemma3ForConditionalGeneration folder); use it with the model it was trained on");
  }
}

std::pair<uint32_t, uint32_t> target_shape(const ModelConfig& c, LoraTarget t) {
  const LayerSpec layer = layer_spec(c, 0);
  const ModuleSpec& p = layer.projection(t);
  return {p.out, p.in};
}

// Far above any rank trained in practice (PEFT's are 4-256); a larger "r" is a broken or hostile file.
constexpr uint32_t kMaxAdapterRank = 65536;
// lora_alpha and lora_dropout beyond this in size are a broken file too.
constexpr double kMaxAdapterScalar = 1e6;

LoraAdapter read_peft_adapter_config(const std::filesystem::path& dir) {
  const auto config_path = dir / "adapter_config.json";
  std::ifstream in(config_path);
  if (!in) throw Error(config_path.string() + ": cannot open (is " + dir.string() + " a PEFT adapter folder?)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(config_path.string() + ": not valid JSON: " + e.what());
  }
  auto fail = [&](const std::string& what) { throw Error(config_path.string() + ": " + what); };
  if (!j.is_object()) fail("not a JSON object");
  LoraAdapter a;
  try {  // every read of a value below: one of the wrong JSON type is a "bad value" error, not a crash
    if (j.value("peft_type", std::string("LORA")) != "LORA") fail("peft_type is not \"LORA\"");
    // Numbers are checked for kind and range before any conversion (util/json_keys.h; adapter_config_fuzz found
    // "r": 1e48 reaching an unchecked float-to-integer conversion, session 26).
    const JsonKeys k(j, config_path.string());
    if (!k.has("r")) fail("missing \"r\"");
    a.rank = k.u32_in("r", 1, kMaxAdapterRank);
    a.alpha = float(k.finite("lora_alpha", a.rank, kMaxAdapterScalar));
    a.rslora = k.boolean("use_rslora", false);
    a.dropout = float(k.finite("lora_dropout", 0.0, kMaxAdapterScalar));
    if (a.dropout < 0.0f || a.dropout >= 1.0f)
      k.fail("lora_dropout", "must be at least 0 and below 1, got " + j["lora_dropout"].dump());
    if (j.value("use_dora", false)) fail("DoRA adapters (use_dora) are not supported");
    if (j.value("fan_in_fan_out", false)) fail("fan_in_fan_out adapters are not supported");
    if (j.value("bias", std::string("none")) != "none") fail("adapters with biases (bias != \"none\") are not supported");
    if (j.value("lora_bias", false)) fail("adapters with a bias on lora_B (lora_bias) are not supported");
    for (const char* key : {"rank_pattern", "alpha_pattern"})
      if (j.contains(key) && !j[key].is_null() && !j[key].empty()) fail(std::string("\"") + key + "\" is not supported");
    if (j.contains("modules_to_save") && !j["modules_to_save"].is_null() && !j["modules_to_save"].empty())
      fail("\"modules_to_save\" (fully trained modules) is not supported");
    const auto& targets = j.at("target_modules");
    if (!targets.is_array()) fail("\"target_modules\" must be a list of module names (regex strings are not supported)");
    for (const auto& t : targets) {
      auto name = t.get<std::string>();
      auto target = parse_target(name);
      if (!target) fail("target module \"" + name + "\" is not one of " + target_names_list());
      a.targets.push_back(*target);
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("bad value: ") + e.what());
  }
  return a;
}

LoraAdapter load_peft_adapter(vk::Device& device, const ModelConfig& c, const std::filesystem::path& dir) {
  LoraAdapter a = read_peft_adapter_config(dir);
  auto weights_path = dir / "adapter_model.safetensors";
  if (!std::filesystem::exists(weights_path))
    throw Error(weights_path.string() + ": missing (PEFT writes the adapter weights there)");
  SafeTensors st = SafeTensors::open(weights_path);
  check_adapter_layer_prefix(st, c.weight_prefix, c.architecture_name);
  std::set<std::string> used;
  a.layers.resize(c.num_layers);
  for (size_t layer = 0; layer < c.num_layers; ++layer) {
    for (LoraTarget t : a.targets) {
      const std::string ka = peft_key(layer, t, false, c.weight_prefix), kb = peft_key(layer, t, true, c.weight_prefix);
      const TensorInfo *ta = st.find(ka), *tb = st.find(kb);
      if (!ta && !tb) continue;  // layers_to_transform may leave layers out
      if (!ta || !tb) throw Error(weights_path.string() + ": \"" + (ta ? kb : ka) + "\" is missing (its pair is present)");
      auto [out, inp] = target_shape(c, t);
      if (ta->shape != std::vector<uint64_t>{a.rank, inp} || tb->shape != std::vector<uint64_t>{out, a.rank})
        throw Error(weights_path.string() + ": " + std::string(target_name(t)) + " of layer " + std::to_string(layer) +
                    " has A " + shape_string(ta->shape) + " and B " + shape_string(tb->shape) + "; expected A [" +
                    std::to_string(a.rank) + ", " + std::to_string(inp) + "] and B [" + std::to_string(out) + ", " +
                    std::to_string(a.rank) + "] for this model");
      LoraPair& p = a.layers[layer][size_t(t)];
      p.a = Tensor::empty(device, {a.rank, inp}, DType::f32, "lora A");
      p.b = Tensor::empty(device, {out, a.rank}, DType::f32, "lora B");
      upload(p.a, ta->values_f32());
      upload(p.b, tb->values_f32());
      used.insert(ka);
      used.insert(kb);
    }
  }
  for (const auto& info : st.tensors())
    if (!used.count(info.name))
      throw Error(weights_path.string() + ": tensor \"" + info.name + "\" is not a LoRA matrix of a target in adapter_config.json");
  if (used.empty()) throw Error(weights_path.string() + ": no LoRA matrices for the targets in adapter_config.json");
  return a;
}

}  // namespace ls::model
