#pragma once
// A Qwen2/Llama/Mistral model's weights on the device, kept in the dtype they were loaded in (bf16, f16
// or f32), except bf16 product weights, which tensor-core devices keep as f16 (docs/design.md
// "Precision"): the matmul kernels read them as they are.
#include <filesystem>
#include <vector>

#include "model/architecture.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "tensor/tensor.h"

namespace ls::model {

struct LinearWeights {
  Tensor w;  // [out, in]
  Tensor b;  // [out], undefined when the layer has no bias
};

struct LayerWeights {
  Tensor input_norm, post_attention_norm;  // [C]
  LinearWeights q, k, v, o, gate, up, down;
};

struct ModelWeights {
  Tensor embed;                    // [V, C]
  std::vector<LayerWeights> layers;
  Tensor final_norm;               // [C]
  Tensor lm_head;                  // [V, C]; the embedding itself when tied
  Tensor inv_freq;                 // [D/2] f32 RoPE inverse frequencies (rope scaling applied)
};

// The field of `w` that a row of the tensor table (model/architecture.h) fills.
const Tensor& weight_of(const ModelWeights& w, const ExpectedTensor& e);
Tensor& weight_of(ModelWeights& w, const ExpectedTensor& e);

// Checks the files against the config (model/architecture.h) and uploads every tensor of the table.
ModelWeights upload_weights(vk::Device& device, const ModelConfig& config, const SafeTensors& files);

// A loaded model: its folder, config and weights.
struct Model {
  std::filesystem::path dir;
  ModelConfig config;
  ModelWeights weights;
  // dir holds config.json and model.safetensors (or a sharded index).
  static Model load(vk::Device& device, const std::filesystem::path& dir);
};

}  // namespace ls::model
