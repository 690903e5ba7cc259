#include "infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "error.h"

namespace ls::infer {

void validate(const SamplerOptions& o) {
  if (!(o.temperature >= 0.0f)) throw Error("sampling: temperature must be >= 0, got " + std::to_string(o.temperature));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) throw Error("sampling: top_p must be in (0, 1], got " + std::to_string(o.top_p));
  if (!(o.min_p >= 0.0f && o.min_p < 1.0f)) throw Error("sampling: min_p must be in [0, 1), got " + std::to_string(o.min_p));
  if (!(o.repetition_penalty > 0.0f))
    throw Error("sampling: repetition_penalty must be > 0, got " + std::to_string(o.repetition_penalty));
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) { validate(options); }

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t V = logits.size();
  if (V == 0) throw Error("sampling: no logits");
  scratch_.assign(logits.begin(), logits.end());
  std::vector<float>& s = scratch_;
  if (options_.repetition_penalty != 1.0f) {
    const float p = options_.repetition_penalty;
    for (int32_t id : history)  // a token seen twice is penalised once, as in HF (gather then scatter)
      if (id >= 0 && size_t(id) < V) s[size_t(id)] = logits[size_t(id)] < 0 ? logits[size_t(id)] * p : logits[size_t(id)] / p;
  }
  if (greedy()) return int32_t(std::max_element(s.begin(), s.end()) - s.begin());  // first maximum, like torch

  const float inv_t = 1.0f / options_.temperature;
  for (float& x : s) x *= inv_t;
  // Candidates by decreasing logit. Only the head of the order matters to top-k/top-p/min-p: sort a
  // prefix, and widen it when the kept probability mass ends inside it.
  candidates_.resize(V);
  for (size_t i = 0; i < V; ++i) candidates_[i] = int32_t(i);
  auto by_logit = [&](int32_t a, int32_t b) { return s[size_t(a)] > s[size_t(b)] || (s[size_t(a)] == s[size_t(b)] && a < b); };
  const float max_logit = *std::max_element(s.begin(), s.end());
  double total = 0;
  for (float x : s) total += std::exp(double(x - max_logit));

  size_t keep = options_.top_k ? std::min<size_t>(options_.top_k, V) : V;
  size_t sorted = std::min<size_t>(keep, 1024);
  for (;;) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(sorted), candidates_.end(), by_logit);
    // Mass of the top-k set (the normaliser for top-p is after top-k, as in HF).
    double norm = total;
    if (keep < V) {
      norm = 0;
      if (sorted < keep) {
        sorted = keep;
        continue;
      }
      for (size_t i = 0; i < keep; ++i) norm += std::exp(double(s[size_t(candidates_[i])] - max_logit));
    }
    size_t n = keep;
    if (options_.top_p < 1.0f) {
      // HF keeps tokens whose cumulative probability (ascending order) is above 1 - top_p, i.e. the
      // descending prefix whose mass first reaches top_p; always at least one.
      double cum = 0;
      size_t i = 0;
      for (; i < sorted; ++i) {
        cum += std::exp(double(s[size_t(candidates_[i])] - max_logit)) / norm;
        if (cum >= options_.top_p) break;
      }
      if (i == sorted && sorted < keep) {
        sorted = std::min(keep, sorted * 4);
        continue;
      }
      n = std::min(n, i + 1);
    }
    if (options_.min_p > 0.0f) {
      // Tokens whose probability is below min_p × the top probability: logit < max + log(min_p).
      const float cut = max_logit + std::log(options_.min_p);
      size_t i = 1;
      while (i < std::min(n, sorted) && s[size_t(candidates_[i])] >= cut) ++i;
      if (i == sorted && sorted < n) {
        sorted = std::min(n, sorted * 4);
        continue;
      }
      n = std::min(n, i);
    }
    if (n > sorted) {  // no cut inside the sorted head: everything kept needs no order
      sorted = n;
    }
    // Draw from the kept set in proportion to exp(logit).
    double mass = 0;
    for (size_t i = 0; i < n; ++i) mass += std::exp(double(s[size_t(candidates_[i])] - max_logit));
    double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
    for (size_t i = 0; i < n; ++i) {
      u -= std::exp(double(s[size_t(candidates_[i])] - max_logit));
      if (u < 0) return candidates_[i];
    }
    return candidates_[n - 1];
  }
}

}  // namespace ls::infer
