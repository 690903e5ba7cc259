#pragma once
// A model folder with random f32 weights for any config we parse: config.json and model.safetensors with
// every tensor of the table (model/architecture.h), for the model tests of families that have no golden
// fixture yet. Values as make_fixtures.py's randomize() draws them (a large init range, so outputs differ
// clearly between positions): norms 1 ± 0.2, biases ± 0.2, weights ± 1.5·√(3/in) (uniform with the
// variance of randomize's normal 1.5/√in; `matrix_scale` replaces the 1.5), each tensor from its own seed. No
// tokenizer: the tests feed ids.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "support/testing.h"

namespace ls::test {

inline void write_random_model(const std::filesystem::path& dir, const nlohmann::json& config, uint32_t seed,
                               float matrix_scale = 1.5f) {
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "config.json");
    f << config.dump(2);
  }
  const model::ModelConfig c = model::parse_config(config, dir / "config.json");
  const std::vector<model::ExpectedTensor> table = model::expected_tensors(c);
  std::vector<std::vector<float>> values;
  values.reserve(table.size());
  for (const model::ExpectedTensor& e : table) {
    const bool norm = e.role == model::TensorRole::layer_norm || e.role == model::TensorRole::final_norm;
    const bool bias = e.role == model::TensorRole::bias;
    const float scale = norm || bias ? 0.2f : matrix_scale * std::sqrt(3.0f / float(e.shape.back()));
    std::vector<float> v = random_values(e.numel(), seed++, scale);
    if (norm)
      for (float& x : v) x += 1.0f;
    values.push_back(std::move(v));
  }
  std::vector<model::TensorToWrite> tensors;
  for (size_t i = 0; i < table.size(); ++i)
    tensors.push_back({.name = table[i].name,
                       .dtype = DType::f32,
                       .shape = table[i].shape,
                       .bytes = std::as_bytes(std::span<const float>(values[i]))});
  model::write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
}

}  // namespace ls::test
