#include "infer/gpu_sampler.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ops/sample.h"

namespace ls::infer {

GpuSampler::GpuSampler(vk::Device& device, const Tensor& logits, const SamplerOptions& options)
    : vocab_(uint32_t(logits.numel())), seed_(options.seed), penalty_(options.repetition_penalty != 1.0f),
      options_(options) {
  validate(options);
  logits_row_ = logits.rank() == 1 ? logits : logits.reshape({vocab_});
  ids_ = Tensor::empty_host(device, {1}, DType::i32, "sampled id");
  seen_ = Tensor::empty_host(device, {ops::sample_seen_words(vocab_)}, DType::i32, "seen ids");
  rng_ = Tensor::empty_host(device, {ops::kSampleRngElems}, DType::i32, "sampler rng");
  work_ = Tensor::empty(device, {ops::sample_work_elems(vocab_)}, DType::i32, "sampler work");
  std::memset(seen_.mapped(), 0, ops::sample_seen_words(vocab_) * sizeof(int32_t));
  vk::Recorder rec(device);
  record(rec);
  program_ = rec.finish();
}

void GpuSampler::record(vk::Recorder& rec) const {
  ops::sample_forward(rec, ids_, work_, logits_row_, seen_, rng_,
                      {.temperature = options_.temperature, .top_k = options_.top_k, .top_p = options_.top_p,
                       .min_p = options_.min_p, .repetition_penalty = options_.repetition_penalty});
}

bool GpuSampler::same_settings(const SamplerOptions& o) const {
  return o.temperature == options_.temperature && o.top_k == options_.top_k && o.top_p == options_.top_p &&
         o.min_p == options_.min_p && o.repetition_penalty == options_.repetition_penalty;
}

void GpuSampler::mark(std::span<const int32_t> history) {
  auto* bits = static_cast<int32_t*>(seen_.mapped());
  const size_t words = ops::sample_seen_words(vocab_);
  const bool extends = history.size() >= marked_.size() && std::equal(marked_.begin(), marked_.end(), history.begin());
  if (!extends) {  // truncated, reset or replaced: the seen set of the new history only
    std::fill(bits, bits + words, 0);
    marked_.clear();
  }
  const auto fresh = history.subspan(marked_.size());
  ops::sample_mark_seen(std::span<int32_t>(bits, words), fresh, vocab_);
  marked_.insert(marked_.end(), fresh.begin(), fresh.end());
}

void GpuSampler::prime(std::span<const int32_t> history, uint32_t counter) {
  if (penalty_) mark(history);
  auto* rng = static_cast<int32_t*>(rng_.mapped());
  rng[0] = int32_t(uint32_t(seed_));
  rng[1] = int32_t(uint32_t(seed_ >> 32));
  rng[2] = int32_t(counter);
}

void GpuSampler::marked(std::span<const int32_t> ids) {
  if (penalty_) marked_.insert(marked_.end(), ids.begin(), ids.end());
}

int32_t GpuSampler::sample(std::span<const int32_t> history, uint32_t counter) {
  prime(history, counter);
  program_.run();
  return *static_cast<const int32_t*>(ids_.mapped());
}

bool cpu_sampling_forced() {
  const char* v = std::getenv("LORASTUDIO_CPU_SAMPLING");
  return v && std::strcmp(v, "1") == 0;
}

}  // namespace ls::infer
