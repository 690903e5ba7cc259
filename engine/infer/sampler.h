#pragma once
// Next-token choice from logits, in the order transformers applies its logits processors:
// repetition penalty, then temperature, top-k, top-p, min-p, then a draw from the softmax.
// temperature 0 means greedy (argmax after the repetition penalty). Seeded: the same seed, logits and
// history give the same tokens.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ls::infer {

struct SamplerOptions {
  float temperature = 0.0f;         // 0: greedy
  uint32_t top_k = 0;               // 0: off
  float top_p = 1.0f;               // 1: off; keep the smallest set of tokens whose probability reaches top_p
  float min_p = 0.0f;               // 0: off; drop tokens below min_p × the top token's probability
  float repetition_penalty = 1.0f;  // 1: off; HF's: logit / p if positive, logit × p if negative, per seen token
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);
  const SamplerOptions& options() const { return options_; }
  bool greedy() const { return options_.temperature <= 0.0f; }
  // history: the ids so far (prompt and generated), for the repetition penalty.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  // The tokens a draw chooses among (not greedy), in no particular order, each with its weight
  // exp(score - max score) (score = penalised logit / T): the reference for the GPU sampler's tests.
  struct Kept {
    int32_t id;
    double weight;
  };
  std::vector<Kept> kept(std::span<const float> logits, std::span<const int32_t> history);

 private:
  void penalise(std::span<const float> logits, std::span<const int32_t> history);  // into scratch_
  size_t keep();
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> scratch_;
  std::vector<double> weights_;
  std::vector<int32_t> candidates_;
};

// Throws ls::Error naming the option when a value is out of range (negative temperature, top_p outside
// (0, 1], min_p outside [0, 1), repetition_penalty <= 0).
void validate(const SamplerOptions& options);

}  // namespace ls::infer
