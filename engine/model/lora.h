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

enum class LoraTarget : uint8_t { q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj };
constexpr size_t kLoraTargetCount = 7;
constexpr std::array<std::string_view, kLoraTargetCount> kLoraTargetNames = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

inline std::string_view target_name(LoraTarget t) { return kLoraTargetNames[size_t(t)]; }
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
  float scale() const { return rslora ? alpha / std::sqrt(float(rank)) : alpha / float(rank); }
  const LoraPair& at(size_t layer, LoraTarget t) const { return layers[layer][size_t(t)]; }
};

}  // namespace ls::model
