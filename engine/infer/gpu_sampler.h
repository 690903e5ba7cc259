#pragma once
// Sampling on the device for the generator: ops::sample_forward recorded once per option set into a small
// program that reads the model's logits where the forward left them and hands back only the id (4 bytes).
// Its draws follow the CPU Sampler's distribution (same kept set, probabilities ∝ exp(score)) but not its
// random stream: a seed gives the same tokens run after run, not the CPU sampler's tokens.
#include <cstdint>
#include <span>
#include <vector>

#include "infer/sampler.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::infer {

class GpuSampler {
 public:
  // logits: f32 [V] (or [1, V]) on `device`, written by the programs run before each sample().
  GpuSampler(vk::Device& device, const Tensor& logits, const SamplerOptions& options);
  // The token for the logits as they are now. history: the context's ids (the repetition penalty's seen
  // set follows it: new ids appended are marked, a history that no longer extends the marked one is
  // marked again from scratch). counter: the draw's index in the seeded stream.
  int32_t sample(std::span<const int32_t> history, uint32_t counter);

  // For a program that samples several times (infer::Generator's bursts): record() records one draw into `rec`
  // (the id into ids(), the counter from rng()[2]); prime() readies the seen set and the counter before such a
  // program runs, as sample() does before its own; marked() tells the sampler which ids the program marked in
  // seen() itself (ops::decode_advance).
  void record(vk::Recorder& rec) const;
  void prime(std::span<const int32_t> history, uint32_t counter);
  void marked(std::span<const int32_t> ids);
  const Tensor& ids() const { return ids_; }
  const Tensor& rng() const { return rng_; }
  const Tensor& seen() const { return seen_; }
  bool penalty() const { return penalty_; }
  uint32_t vocab() const { return vocab_; }
  // Whether `options` draw as this sampler does (the seed aside: set_seed changes it).
  bool same_settings(const SamplerOptions& options) const;
  void set_seed(uint64_t seed) { seed_ = seed; }

 private:
  void mark(std::span<const int32_t> history);

  uint32_t vocab_;
  uint64_t seed_;
  bool penalty_;
  SamplerOptions options_;
  Tensor logits_row_, ids_, seen_, rng_, work_;
  vk::Program program_;
  std::vector<int32_t> marked_;  // the history whose ids the seen bits hold
};

// LORASTUDIO_CPU_SAMPLING=1: the generator samples on the CPU (infer::Sampler) from downloaded logits.
bool cpu_sampling_forced();

}  // namespace ls::infer
