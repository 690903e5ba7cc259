#include "model/lora_init.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"
#include "model/layer_spec.h"
#include "model/peft_adapter.h"

namespace ls::model {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::next() {
  state += 0x9e3779b97f4a7c15ull;
  return mix64(state);
}

float uniform_symmetric(uint64_t x, float bound) {
  const float u = float(x >> 40) * 0x1p-24f;  // 24 bits: exact
  return bound * (2.0f * u - 1.0f);           // 2u - 1 = (k - 2^23) / 2^23: exact
}

float lora_a_bound(uint32_t in_features) { return float(1.0 / std::sqrt(double(in_features))); }

std::vector<float> lora_a_values(uint32_t rank, uint32_t in_features, uint64_t seed, uint32_t layer, LoraTarget target) {
  const uint64_t key = uint64_t(layer) * kLoraStreamsPerLayer + uint64_t(stream_target(target));
  SplitMix64 rng{mix64(seed ^ mix64(key))};
  const float bound = lora_a_bound(in_features);
  std::vector<float> a(size_t(rank) * in_features);
  for (float& x : a) x = uniform_symmetric(rng.next(), bound);
  return a;
}

void check_targets(const ModelConfig& config, std::span<const LoraTarget> targets, const std::string& where) {
  const LayerSpec layer0 = layer_spec(config, 0);
  for (LoraTarget t : targets)
    if (!layer0.has_projection(t)) {
      std::string has;
      for (const ModuleSpec& m : layer0.modules)
        if (m.target) has += (has.empty() ? "" : ", ") + std::string(target_name(*m.target));
      throw Error(where + ": target module \"" + std::string(target_name(t)) + "\" is not a projection of " +
                  config.architecture_name + " (its projections: " + has + ")");
    }
}

std::vector<LoraTarget> fit_targets(const ModelConfig& config, std::span<const LoraTarget> targets) {
  const LayerSpec layer = layer_spec(config, 0);
  bool ticked[kLoraTargetCount] = {};
  for (LoraTarget t : targets) {
    if (layer.has_projection(t)) {
      ticked[size_t(t)] = true;
    } else if (const auto f = layer.fused_rows(t)) {
      ticked[size_t(f->fused)] = true;
    } else if (t == LoraTarget::qkv_proj) {
      for (LoraTarget p : {LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj}) ticked[size_t(p)] = true;
    } else if (t == LoraTarget::gate_up_proj) {
      for (LoraTarget p : {LoraTarget::gate_proj, LoraTarget::up_proj}) ticked[size_t(p)] = true;
    } else {
      ticked[size_t(t)] = true;  // nothing holds it: check_targets names it
    }
  }
  std::vector<LoraTarget> out;
  for (size_t i = 0; i < kLoraTargetCount; ++i)
    if (ticked[i]) out.push_back(LoraTarget(i));
  return out;
}

LoraAdapter init_lora(vk::Device& device, const ModelConfig& config, std::vector<LoraTarget> targets, uint32_t rank,
                      float alpha, bool rslora, float dropout, uint64_t seed) {
  auto fail = [](const std::string& what) { throw Error("init_lora: " + what); };
  if (rank == 0) fail("rank is 0; expected at least 1");
  if (!(alpha > 0) || !std::isfinite(alpha)) fail("alpha is " + std::to_string(alpha) + "; expected a positive number");
  if (!(dropout >= 0 && dropout < 1)) fail("dropout is " + std::to_string(dropout) + "; expected 0 <= dropout < 1");
  if (targets.empty()) fail("no target modules");
  for (size_t i = 0; i < targets.size(); ++i)
    if (std::find(targets.begin(), targets.begin() + ptrdiff_t(i), targets[i]) != targets.begin() + ptrdiff_t(i))
      fail("target module \"" + std::string(target_name(targets[i])) + "\" is listed twice");

  check_targets(config, targets, "init_lora");

  LoraAdapter a;
  a.rank = rank;
  a.alpha = alpha;
  a.rslora = rslora;
  a.dropout = dropout;
  a.targets = std::move(targets);
  a.layers.resize(config.num_layers);
  for (uint32_t layer = 0; layer < config.num_layers; ++layer) {
    for (LoraTarget t : a.targets) {
      const auto [out, in] = target_shape(config, t);
      LoraPair& p = a.layers[layer][size_t(t)];
      p.a = Tensor::empty(device, {rank, in}, DType::f32, "lora A");
      p.b = Tensor::empty(device, {out, rank}, DType::f32, "lora B");
      upload(p.a, lora_a_values(rank, in, seed, layer, t));
      upload(p.b, std::vector<float>(size_t(out) * rank, 0.0f));
    }
  }
  return a;
}

}  // namespace ls::model
