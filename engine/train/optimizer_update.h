#pragma once
// The optimizer half of a training step, recorded once and replayed: global gradient norm, the
// clip factor (into hyper[7]) and AdamW on every LoRA matrix (ops/optimizer.h). hyper is written by
// the host before each run (train::hyper_values).
#include <vector>

#include "model/lora.h"
#include "vk/recorder.h"

namespace ls::train {

// An adapter's matrices as one list: A then B of each adapted target, layer by layer.
std::vector<Tensor> lora_matrices(const model::LoraAdapter& adapter);

// grads = 0 (before the micro-batches of a step accumulate into them).
void record_zero_grads(vk::Recorder& rec, const model::LoraAdapter& grads);

// sumsq [1] and norm [1] f32 scratch/outputs (norm: the global gradient norm before clipping).
void record_optimizer_update(vk::Recorder& rec, const model::LoraAdapter& params, const model::LoraAdapter& grads,
                             const model::LoraAdapter& exp_avg, const model::LoraAdapter& exp_avg_sq,
                             const Tensor& hyper, const Tensor& sumsq, const Tensor& norm, float max_grad_norm);

}  // namespace ls::train
