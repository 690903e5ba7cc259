#include "model/peft_adapter.h"

#include <cstring>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/safetensors.h"

namespace ls::model {

namespace {

bool is_attention(LoraTarget t) { return t <= LoraTarget::o_proj; }

std::vector<float> as_floats(const TensorInfo& info) {
  std::vector<float> v(info.numel());
  const auto* p = reinterpret_cast<const uint8_t*>(info.bytes.data());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    switch (info.dtype) {
      case DType::f32: std::memcpy(&v[i], p + 4 * i, 4); break;
      case DType::f16: std::memcpy(&h, p + 2 * i, 2); v[i] = f16_to_f32(h); break;
      case DType::bf16: std::memcpy(&h, p + 2 * i, 2); v[i] = bf16_to_f32(h); break;
      default: throw Error(info.file.string() + ": tensor \"" + info.name + "\" is not a float tensor");
    }
  }
  return v;
}

std::string shape_string_of(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string peft_key(size_t layer, LoraTarget target, bool b_matrix) {
  return "base_model.model.model.layers." + std::to_string(layer) + (is_attention(target) ? ".self_attn." : ".mlp.") +
         std::string(target_name(target)) + (b_matrix ? ".lora_B.weight" : ".lora_A.weight");
}

std::pair<uint32_t, uint32_t> target_shape(const ModelConfig& c, LoraTarget t) {
  const uint32_t C = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim,
                 I = c.intermediate_size;
  switch (t) {
    case LoraTarget::q_proj: return {q, C};
    case LoraTarget::k_proj:
    case LoraTarget::v_proj: return {kv, C};
    case LoraTarget::o_proj: return {C, q};
    case LoraTarget::gate_proj:
    case LoraTarget::up_proj: return {I, C};
    case LoraTarget::down_proj: return {C, I};
  }
  return {0, 0};
}

LoraAdapter load_peft_adapter(vk::Device& device, const ModelConfig& c, const std::filesystem::path& dir) {
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
  if (j.value("peft_type", std::string("LORA")) != "LORA") fail("peft_type is not \"LORA\"");
  LoraAdapter a;
  try {
    if (!j.contains("r")) fail("missing \"r\"");
    a.rank = j.at("r").get<uint32_t>();
    a.alpha = j.value("lora_alpha", float(a.rank));
    a.rslora = j.value("use_rslora", false);
    a.dropout = j.value("lora_dropout", 0.0f);
    if (j.value("use_dora", false)) fail("DoRA adapters (use_dora) are not supported");
    if (j.value("fan_in_fan_out", false)) fail("fan_in_fan_out adapters are not supported");
    if (j.value("bias", std::string("none")) != "none") fail("adapters with biases (bias != \"none\") are not supported");
    for (const char* key : {"rank_pattern", "alpha_pattern"})
      if (j.contains(key) && !j[key].is_null() && !j[key].empty()) fail(std::string("\"") + key + "\" is not supported");
    if (j.contains("modules_to_save") && !j["modules_to_save"].is_null() && !j["modules_to_save"].empty())
      fail("\"modules_to_save\" (fully trained modules) is not supported");
    const auto& targets = j.at("target_modules");
    if (!targets.is_array()) fail("\"target_modules\" must be a list of module names (regex strings are not supported)");
    for (const auto& t : targets) {
      auto name = t.get<std::string>();
      auto target = parse_target(name);
      if (!target) fail("target module \"" + name + "\" is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
      a.targets.push_back(*target);
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("bad value: ") + e.what());
  }
  if (a.rank == 0) fail("\"r\" must be positive");

  auto weights_path = dir / "adapter_model.safetensors";
  if (!std::filesystem::exists(weights_path))
    throw Error(weights_path.string() + ": missing (PEFT writes the adapter weights there)");
  SafeTensors st = SafeTensors::open(weights_path);
  std::set<std::string> used;
  a.layers.resize(c.num_layers);
  for (size_t layer = 0; layer < c.num_layers; ++layer) {
    for (LoraTarget t : a.targets) {
      const std::string ka = peft_key(layer, t, false), kb = peft_key(layer, t, true);
      const TensorInfo *ta = st.find(ka), *tb = st.find(kb);
      if (!ta && !tb) continue;  // layers_to_transform may leave layers out
      if (!ta || !tb) throw Error(weights_path.string() + ": \"" + (ta ? kb : ka) + "\" is missing (its pair is present)");
      auto [out, inp] = target_shape(c, t);
      if (ta->shape != std::vector<uint64_t>{a.rank, inp} || tb->shape != std::vector<uint64_t>{out, a.rank})
        throw Error(weights_path.string() + ": " + std::string(target_name(t)) + " of layer " + std::to_string(layer) +
                    " has A " + shape_string_of(ta->shape) + " and B " + shape_string_of(tb->shape) + "; expected A [" +
                    std::to_string(a.rank) + ", " + std::to_string(inp) + "] and B [" + std::to_string(out) + ", " +
                    std::to_string(a.rank) + "] for this model");
      LoraPair& p = a.layers[layer][size_t(t)];
      p.a = Tensor::empty(device, {a.rank, inp}, DType::f32, "lora A");
      p.b = Tensor::empty(device, {out, a.rank}, DType::f32, "lora B");
      upload(p.a, as_floats(*ta));
      upload(p.b, as_floats(*tb));
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
