#pragma once
#include <string>
#include <vector>

#include "vk/device.h"

namespace ls::bench {

struct InferenceBenchOptions {
  std::string model_dir;
  std::string quantize = "none";  // the weights in nf4 or q8
  uint32_t prefill_tokens = 512;   // the peer's prefill figure is at 512 tokens
  uint32_t prompt_tokens = 128;    // decode: prompt length before the timed tokens (peer: --prompt 128)
  uint32_t new_tokens = 100;       // decode: timed tokens (peer: --new-tokens 100)
  uint32_t repeats = 5;            // prefill runs (median)
  uint32_t context = 0;            // the KV cache's tokens (0: as many as the runs need; the app's chat keeps 4096)
  std::string act = "auto";        // f32 | f16 | auto (f16 where the device has f16 arithmetic)
  std::vector<uint32_t> batches;  // batched generation (infer::BatchGenerator) at each of these batch sizes
  std::string json;
};

// Prefill and greedy decode on a model folder: tokens/s from wall time (what a user waits for), and
// the GPU time per op group of one decode token from timestamps.
int run_inference(vk::Device& device, const InferenceBenchOptions& options);

}  // namespace ls::bench
