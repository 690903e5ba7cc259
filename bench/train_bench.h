#pragma once
#include <string>

#include "vk/device.h"

namespace ls::bench {

struct TrainBenchOptions {
  std::string model_dir;
  std::string quantize = "none";  // the base in nf4 or q8 (QLoRA)
  uint32_t batch = 1, seq = 512, rank = 8, steps = 10, warmup = 2;
  float alpha = 16;
  std::string targets = "q_proj,v_proj";
  bool grad_checkpoint = false;  // recompute activations in the backward
  std::string json;
  std::string trace;  // every dispatch of the profiled step (group, kernel, µs) to this file, in order
};

// LoRA training steps on random tokens (the peer's setup: r8 α16 on q,v, AdamW): ms/step and tokens/s
// from wall time (one step = zero grads, forward+backward, grad norm + clip + AdamW), GPU time per op
// group of one profiled step, and the device memory the engine holds.
int run_train(vk::Device& device, const TrainBenchOptions& options);

}  // namespace ls::bench
