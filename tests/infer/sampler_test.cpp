// Samplers (infer/sampler.h) against their definitions (transformers' logits processors): greedy is the
// first argmax after the repetition penalty; top-k / top-p / min-p keep exactly the expected sets;
// temperature-1 draws follow softmax (chi-square-like bound on 20000 draws); seeds reproduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "error.h"
#include "infer/sampler.h"

namespace ls {
namespace {

using infer::Sampler;
using infer::SamplerOptions;

std::set<int32_t> support(SamplerOptions o, const std::vector<float>& logits, int draws = 3000) {
  Sampler s(o);
  std::set<int32_t> seen;
  for (int i = 0; i < draws; ++i) seen.insert(s.sample(logits, {}));
  return seen;
}

TEST(Sampler, GreedyIsFirstArgmax) {
  Sampler s({});
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 3, 2}, {}), 1);
}

TEST(Sampler, RepetitionPenaltyAsHF) {
  // logit 3 (seen) / 2 = 1.5 < 2; logit -1 (seen) * 2 = -2.
  Sampler s({.repetition_penalty = 2.0f});
  std::vector<float> logits{3, 2, -1};
  std::vector<int32_t> history{0, 0, 2};
  EXPECT_EQ(s.sample(logits, history), 1);
}

TEST(Sampler, TopKTopPMinPKeepTheExpectedSets) {
  // probabilities at temperature 1: softmax of log(p) = p.
  std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  EXPECT_EQ(support({.temperature = 1, .top_k = 2}, logits), (std::set<int32_t>{0, 1}));
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.75f}, logits), (std::set<int32_t>{0, 1}));   // 0.5 + 0.3 >= 0.75
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.5f}, logits), (std::set<int32_t>{0}));
  EXPECT_EQ(support({.temperature = 1, .top_p = 0.85f}, logits), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(support({.temperature = 1, .min_p = 0.2f}, logits), (std::set<int32_t>{0, 1, 2}));  // >= 0.1
  EXPECT_EQ(support({.temperature = 1, .min_p = 0.7f}, logits), (std::set<int32_t>{0}));
  EXPECT_EQ(support({.temperature = 1}, logits), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
  std::vector<float> logits{0.0f, 1.0f, 2.0f, -1.0f, 0.5f};
  double z = 0;
  for (float l : logits) z += std::exp(l);
  Sampler s({.temperature = 1.0f, .seed = 42});
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits, {})];
  for (size_t i = 0; i < logits.size(); ++i) {
    double p = std::exp(logits[i]) / z, expected = p * n, sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(counts[int32_t(i)], expected, 5 * sd) << "token " << i;
  }
}

TEST(Sampler, LargeVocabularyTopPAndSeeds) {
  std::vector<float> logits(151936);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float((i * 2654435761u) % 1000) / 100.0f;
  SamplerOptions o{.temperature = 0.8f, .top_p = 0.9f, .seed = 7};
  Sampler a(o), b(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits, {}), b.sample(logits, {}));
}

// A broad distribution (the cut found through the histogram path): every draw lies in the brute-force
// top-p set, and the set's least likely tokens do get drawn.
TEST(Sampler, BroadTopPMatchesBruteForce) {
  std::vector<float> logits(5000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float((i * 7919u) % 997) / 300.0f;
  const float top_p = 0.6f;
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  std::set<int32_t> kept;
  double cum = 0;
  for (int32_t id : order) {
    kept.insert(id);
    cum += std::exp(double(logits[size_t(id)])) / z;
    if (cum >= top_p) break;
  }
  auto seen = support({.temperature = 1, .top_p = top_p, .seed = 3}, logits, 8000);
  for (int32_t id : seen) EXPECT_TRUE(kept.count(id)) << "token " << id << " is outside the top-p set";
  EXPECT_GT(seen.size(), kept.size() * 3 / 4);
}

TEST(Sampler, RejectsBadOptions) {
  EXPECT_THROW(Sampler({.temperature = -1}), Error);
  EXPECT_THROW(Sampler({.top_p = 0}), Error);
  EXPECT_THROW(Sampler({.top_p = 1.5f}), Error);
  EXPECT_THROW(Sampler({.min_p = 1}), Error);
  EXPECT_THROW(Sampler({.repetition_penalty = 0}), Error);
}

}  // namespace
}  // namespace ls
