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

void Sampler::penalise(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t V = logits.size();
  if (V == 0) throw Error("sampling: no logits");
  scratch_.assign(logits.begin(), logits.end());
  std::vector<float>& s = scratch_;
  if (options_.repetition_penalty != 1.0f) {
    const float p = options_.repetition_penalty;
    for (int32_t id : history)  // a token seen twice is penalised once, as in HF (gather then scatter)
      if (id >= 0 && size_t(id) < V) s[size_t(id)] = logits[size_t(id)] < 0 ? logits[size_t(id)] * p : logits[size_t(id)] / p;
  }
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  penalise(logits, history);
  if (greedy()) return int32_t(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());  // first maximum, like torch
  const size_t n = keep();
  // Draw from the kept set in proportion to exp(logit) (the order of unsorted tails does not matter).
  auto w = [&](size_t i) { return weights_[size_t(candidates_[i])]; };
  double mass = 0;
  for (size_t i = 0; i < n; ++i) mass += w(i);
  double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  for (size_t i = 0; i < n; ++i) {
    u -= w(i);
    if (u < 0) return candidates_[i];
  }
  return candidates_[n - 1];
}

std::vector<Sampler::Kept> Sampler::kept(std::span<const float> logits, std::span<const int32_t> history) {
  if (greedy()) throw Error("sampling: greedy sampling keeps no set");
  penalise(logits, history);
  const size_t n = keep();
  std::vector<Kept> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = {candidates_[i], weights_[size_t(candidates_[i])]};
  return out;
}

// The kept tokens are candidates_[0, n), with weights_[id] = exp(score - max score); scratch_ holds the
// penalised logits.
size_t Sampler::keep() {
  const size_t V = scratch_.size();
  std::vector<float>& s = scratch_;
  const float inv_t = 1.0f / options_.temperature;
  for (float& x : s) x *= inv_t;
  const float max_logit = *std::max_element(s.begin(), s.end());
  // exp(logit - max) once per token; the normaliser of the whole distribution.
  weights_.resize(V);
  double total = 0;
  for (size_t i = 0; i < V; ++i) total += weights_[i] = std::exp(double(s[i] - max_logit));
  // Candidates by decreasing logit (ties: lower id first). top-k, top-p and min-p only look at the head
  // of that order: sort the top 1024 first and the whole vocabulary only when the head is not enough.
  candidates_.resize(V);
  for (size_t i = 0; i < V; ++i) candidates_[i] = int32_t(i);
  auto by_logit = [&](int32_t a, int32_t b) { return s[size_t(a)] > s[size_t(b)] || (s[size_t(a)] == s[size_t(b)] && a < b); };
  const size_t keep_k = options_.top_k ? std::min<size_t>(options_.top_k, V) : V;
  size_t sorted = std::min<size_t>(keep_k, 1024);
  std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(sorted), candidates_.end(), by_logit);
  auto sort_all_kept = [&] {
    if (sorted < keep_k) {
      std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(keep_k), candidates_.end(), by_logit);
      sorted = keep_k;
    }
  };
  auto w = [&](size_t i) { return weights_[size_t(candidates_[i])]; };
  // top-k: the normaliser of top-p is the mass of the top-k set (HF applies top-k first).
  double norm = total;
  if (keep_k < V) {
    sort_all_kept();
    norm = 0;
    for (size_t i = 0; i < keep_k; ++i) norm += w(i);
  }
  size_t n = keep_k;
  if (options_.top_p < 1.0f) {
    // HF removes tokens whose ascending cumulative probability is <= 1 - top_p: keep the descending
    // prefix whose mass first reaches top_p (at least one token).
    auto prefix = [&](size_t limit) {
      double cum = 0;
      for (size_t i = 0; i < limit; ++i) {
        cum += w(i) / norm;
        if (cum >= options_.top_p) return i + 1;
      }
      return size_t(0);
    };
    size_t cut = prefix(sorted);
    if (!cut && keep_k == V) {
      // A broad distribution: find the cut with a histogram of logits below the maximum instead of
      // sorting the whole vocabulary. Tokens in buckets above the cut bucket are kept whatever their
      // order; only the cut bucket is sorted.
      constexpr size_t kBuckets = 4096;
      constexpr float kRange = 40.0f;  // exp(-40) of the top weight: nothing below matters
      auto bucket = [&](int32_t id) {
        float d = (max_logit - s[size_t(id)]) * (float(kBuckets) / kRange);
        return d >= float(kBuckets - 1) ? kBuckets - 1 : size_t(d);
      };
      std::vector<double> mass_of(kBuckets, 0.0);
      for (size_t i = 0; i < V; ++i) mass_of[bucket(int32_t(i))] += weights_[i];
      const double goal = double(options_.top_p) * norm;
      double above = 0;
      size_t cut_bucket = 0;
      while (cut_bucket + 1 < kBuckets && above + mass_of[cut_bucket] < goal) above += mass_of[cut_bucket++];
      // Order: buckets above the cut, then the cut bucket by decreasing logit, then the rest.
      auto mid = std::partition(candidates_.begin(), candidates_.end(), [&](int32_t id) { return bucket(id) < cut_bucket; });
      auto end = std::partition(mid, candidates_.end(), [&](int32_t id) { return bucket(id) == cut_bucket; });
      std::sort(mid, end, by_logit);
      double cum = above;
      size_t i = size_t(mid - candidates_.begin());
      cut = i;
      for (auto it = mid; it != end; ++it) {
        cum += weights_[size_t(*it)];
        ++cut;
        if (cum >= goal) break;
      }
      cut = std::max<size_t>(cut, 1);
      sorted = 0;  // the head is no longer sorted as a whole; min-p below uses the exact floor test
    } else if (!cut) {
      sort_all_kept();
      cut = prefix(sorted);
      if (!cut) cut = sorted;  // rounding: the whole kept set
    }
    n = std::min(n, cut);
  }
  if (options_.min_p > 0.0f) {
    // Below min_p × the top probability: logit < max + log(min_p). The kept tokens are a prefix.
    const float floor_logit = max_logit + std::log(options_.min_p);
    if (sorted == 0) {  // after the histogram path: move the tokens above the floor to the front
      auto end = std::partition(candidates_.begin(), candidates_.begin() + ptrdiff_t(n),
                                [&](int32_t id) { return s[size_t(id)] >= floor_logit; });
      n = std::max<size_t>(1, size_t(end - candidates_.begin()));
    } else {
      size_t i = 1;
      while (i < n && i < sorted && s[size_t(candidates_[i])] >= floor_logit) ++i;
      if (i == sorted && sorted < n) {
        sort_all_kept();
        while (i < n && s[size_t(candidates_[i])] >= floor_logit) ++i;
      }
      n = std::min(n, i);
    }
  }
  return n;
}

}  // namespace ls::infer
