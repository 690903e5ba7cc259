#pragma once
// A LoRA adapter on every projection of every layer with random (never zero) A and B, so that every
// gradient and every adapted output is non-trivial: for the model tests.
#include <cstdint>

#include "model/config.h"
#include "model/lora.h"
#include "model/peft_adapter.h"
#include "support/testing.h"

namespace ls::test {

inline model::LoraAdapter random_adapter(vk::Device& dev, const model::ModelConfig& c, uint32_t rank, uint32_t seed) {
  model::LoraAdapter a;
  a.rank = rank;
  a.alpha = 2.0f * float(rank);
  for (size_t t = 0; t < model::kLoraTargetCount; ++t) a.targets.push_back(model::LoraTarget(t));
  a.layers.resize(c.num_layers);
  for (size_t i = 0; i < c.num_layers; ++i)
    for (size_t t = 0; t < model::kLoraTargetCount; ++t) {
      auto [out, in] = model::target_shape(c, model::LoraTarget(t));
      auto& p = a.layers[i][t];
      p.a = tensor_from(dev, {rank, in}, DType::f32, random_values(size_t(rank) * in, seed++, 0.2f));
      p.b = tensor_from(dev, {out, rank}, DType::f32, random_values(size_t(out) * rank, seed++, 0.2f));
    }
  return a;
}

}  // namespace ls::test
