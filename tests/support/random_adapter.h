#pragma once
// A LoRA adapter on every projection of every layer (every target the model has: Phi-3's fused ones, or
// their parts) with random (never zero) A and B, so that every gradient and every adapted output is
// non-trivial: for the model tests.
#include <cstdint>

#include "model/config.h"
#include "model/layer_spec.h"
#include "model/lora.h"
#include "model/peft_adapter.h"
#include "support/testing.h"

namespace ls::test {

inline model::LoraAdapter random_adapter(vk::Device& dev, const model::ModelConfig& c, uint32_t rank, uint32_t seed) {
  model::LoraAdapter a;
  a.rank = rank;
  a.alpha = 2.0f * float(rank);
  const model::LayerSpec layer = model::layer_spec(c, 0);
  for (size_t t = 0; t < model::kLoraTargetCount; ++t)
    if (layer.has_projection(model::LoraTarget(t))) a.targets.push_back(model::LoraTarget(t));
  a.layers.resize(c.num_layers);
  for (size_t i = 0; i < c.num_layers; ++i)
    for (model::LoraTarget target : a.targets) {
      const size_t t = size_t(target);
      auto [out, in] = model::target_shape(c, target);
      auto& p = a.layers[i][t];
      p.a = tensor_from(dev, {rank, in}, DType::f32, random_values(size_t(rank) * in, seed++, 0.2f));
      p.b = tensor_from(dev, {out, rank}, DType::f32, random_values(size_t(out) * rank, seed++, 0.2f));
    }
  return a;
}

}  // namespace ls::test
