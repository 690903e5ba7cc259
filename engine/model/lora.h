#pragma once
// LoRA adapters on the linear layers of the transformer: y = x·Wᵀ + b + scale·(x·Aᵀ)·Bᵀ with
// A [r, in], B [out, r] in f32, scale = alpha / r (or alpha / sqrt(r) with rsLoRA), as PEFT defines them.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace ls::model {

// The projections an adapter can adapt, by PEFT's names. qkv_proj and gate_up_proj are Phi-3's fused
// projections ([q; k; v] and [gate; up] stacked by rows); a model has either them or the parts they hold.
enum class LoraTarget : uint8_t {
  q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, qkv_proj, gate_up_proj
};
constexpr size_t kLoraTargetCount = 9;
constexpr std::array<std::string_view, kLoraTargetCount> kLoraTargetNames = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "qkv_proj", "gate_up_proj"};

inline std::string_view target_name(LoraTarget t) { return kLoraTargetNames[size_t(t)]; }
// "q_proj, k_proj, ..., gate_up_proj", for messages.
inline std::string target_names_list() {
  std::string s;
  for (std::string_view n : kLoraTargetNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}
// A fused projection's first part (qkv_proj: q_proj, gate_up_proj: gate_proj), the target itself otherwise.
// Seeds and dropout streams are keyed by it, so the seven plain targets keep the keys they had before the
// fused ones existed (a model never has both a fused projection and its parts).
inline LoraTarget stream_target(LoraTarget t) {
  return t == LoraTarget::qkv_proj ? LoraTarget::q_proj : t == LoraTarget::gate_up_proj ? LoraTarget::gate_proj : t;
}
constexpr size_t kLoraStreamsPerLayer = 7;  // stream_target's values
inline std::optional<LoraTarget> parse_target(std::string_view name) {
  for (size_t i = 0; i < kLoraTargetCount; ++i)
    if (kLoraTargetNames[i] == name) return LoraTarget(i);
  return std::nullopt;
}

struct LoraPair {
  Tensor a;  // [r, in] f32; undefined when this layer's target is not adapted
  Tensor b;  // [out, r] f32
  bool defined() const { return a.defined(); }
};

struct LoraAdapter {
  uint32_t rank = 8;
  float alpha = 16;
  bool rslora = false;
  float dropout = 0;
  std::vector<LoraTarget> targets;
  std::vector<std::array<LoraPair, kLoraTargetCount>> layers;  // [layer][target]
  // Defined when every matrix is a view of one allocation (model::flat_like, training.h): all of it, the
  // padding between the matrices zero. Training's zeroing and AdamW then take one dispatch each.
  Tensor storage;
  float scale() const { return rslora ? alpha / std::sqrt(float(rank)) : alpha / float(rank); }
  const LoraPair& at(size_t layer, LoraTarget t) const { return layers[layer][size_t(t)]; }
};

}  // namespace ls::model
