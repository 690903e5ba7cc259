// sample_forward / sample_kept (GPU sampling) against the CPU Sampler (infer/sampler.h), the reference.
// Vocabularies 37, 1000 and 151,936+128 = 152,064; logits random (never zero), very peaked, very flat
// (many exact ties in f32), and with duplicate maxima; options: greedy, greedy + repetition penalty,
// T = 0.7, top-k 40, top-p 0.9, min-p 0.05, all combined, top-k 1000 with top-p 0.5.
//  - greedy: the GPU id equals the CPU's exactly.
//  - kept set: the GPU's mask equals the CPU's kept set exactly. (Both compare masses near top-p's
//    boundary: the CPU in double, the GPU as exact sums of f32 exp() in 2^-40 fixed point. They can only
//    disagree when a prefix's mass is within ~1e-7 relative of top_p × its normaliser; none of these
//    fixed inputs comes near that, and the failure message would show the two boundaries.)
//  - draws: N draws (counters 0 .. N-1, one dispatch) land in the kept set, and their frequencies pass a
//    chi-square test against the CPU's probabilities w_i / Σ w at p = 1e-6 (Wilson–Hilferty, z = 4.753;
//    bins with expected count >= 5, the rest pooled). Fixed seeds: the test is deterministic.
//  - a seed and counter reproduce their id; different counters give different ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "infer/sampler.h"
#include "ops/decode_advance.h"
#include "ops/sample.h"
#include "support/testing.h"

namespace ls {
namespace {

using infer::SamplerOptions;

enum class Dist { random, peaked, flat, tied_max };
const char* shape_name(Dist s) {
  switch (s) {
    case Dist::random: return "random";
    case Dist::peaked: return "peaked";
    case Dist::flat: return "flat";
    case Dist::tied_max: return "tied maxima";
  }
  return "?";
}

std::vector<float> make_logits(uint32_t V, Dist shape, uint32_t seed) {
  switch (shape) {
    case Dist::random: return test::random_values(V, seed, 6.0f);
    case Dist::peaked: {
      auto v = test::random_values(V, seed, 2.0f);
      v[V / 3] = 14.0f;  // e^12 over the next: nearly all the mass
      v[V / 2] = 12.5f;
      return v;
    }
    case Dist::flat: return test::random_values(V, seed, 1e-3f);
    case Dist::tied_max: {
      auto v = test::random_values(V, seed, 3.0f);
      for (uint32_t id : {V / 5, V / 5 + 1, V / 2, V - 1}) v[id] = 4.5f;
      return v;
    }
  }
  return {};
}

// The prompt-and-generated ids the repetition penalty sees: repeats included (penalised once).
std::vector<int32_t> make_history(uint32_t V, uint32_t seed) {
  auto h = test::random_ints(std::min<uint32_t>(V, 300), seed, 0, int32_t(V) - 1);
  h.push_back(h.front());
  return h;
}

ops::SampleSettings settings_of(const SamplerOptions& o) {
  return {.temperature = o.temperature, .top_k = o.top_k, .top_p = o.top_p, .min_p = o.min_p,
          .repetition_penalty = o.repetition_penalty};
}

std::string describe(const SamplerOptions& o) {
  return "T " + std::to_string(o.temperature) + " top_k " + std::to_string(o.top_k) + " top_p " +
         std::to_string(o.top_p) + " min_p " + std::to_string(o.min_p) + " penalty " +
         std::to_string(o.repetition_penalty);
}

const std::vector<SamplerOptions> kSampled = {
    {.temperature = 0.7f},
    {.temperature = 1.0f, .top_k = 40},
    {.temperature = 1.0f, .top_p = 0.9f},
    {.temperature = 1.0f, .min_p = 0.05f},
    {.temperature = 0.8f, .top_k = 40, .top_p = 0.9f, .min_p = 0.05f, .repetition_penalty = 1.3f},
    {.temperature = 1.2f, .top_k = 1000, .top_p = 0.5f, .repetition_penalty = 0.8f},
};

class Sample : public test::GpuTest {
 protected:
  // The device inputs of one sampling: logits, the seen bits of `history`, the rng words and the scratch.
  struct Inputs {
    Tensor logits, seen, rng, work;
  };
  Inputs inputs(std::span<const float> logits, std::span<const int32_t> history, uint64_t seed, uint32_t counter) {
    const uint32_t V = uint32_t(logits.size());
    std::vector<int32_t> bits(ops::sample_seen_words(V), 0);
    ops::sample_mark_seen(bits, history, V);
    std::vector<int32_t> rng{int32_t(uint32_t(seed)), int32_t(uint32_t(seed >> 32)), int32_t(counter)};
    return {test::tensor_from(dev(), {V}, DType::f32, logits), test::tensor_from_ints(dev(), {uint32_t(bits.size())}, bits),
            test::tensor_from_ints(dev(), {ops::kSampleRngElems}, rng),
            Tensor::empty(dev(), {ops::sample_work_elems(V)}, DType::i32, "work")};
  }
  // `draws` ids with counters counter .. counter + draws - 1, in dispatches of at most kSampleMaxDraws.
  std::vector<int32_t> draw(std::span<const float> logits, std::span<const int32_t> history, uint64_t seed,
                            uint32_t counter, const SamplerOptions& o, uint32_t draws) {
    std::vector<int32_t> ids;
    for (uint32_t done = 0; done < draws;) {
      const uint32_t n = std::min(draws - done, ops::kSampleMaxDraws);
      auto part = draw(inputs(logits, history, seed, counter + done), o, n);
      ids.insert(ids.end(), part.begin(), part.end());
      done += n;
    }
    return ids;
  }
  std::vector<int32_t> draw(const Inputs& in, const SamplerOptions& o, uint32_t draws) {
    auto ids = test::poisoned(dev(), {draws}, DType::i32);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::sample_forward(rec, ids.t, in.work, in.logits, in.seen, in.rng, settings_of(o));
    });
    ids.expect_guards_intact("sample_forward");
    return download_i32(ids.t);
  }
  std::set<int32_t> gpu_kept(const Inputs& in, const SamplerOptions& o, uint32_t V) {
    auto mask = test::poisoned(dev(), {V}, DType::i32);
    test::run(dev(), [&](vk::Recorder& rec) {
      ops::sample_kept(rec, mask.t, in.work, in.logits, in.seen, in.rng, settings_of(o));
    });
    mask.expect_guards_intact("sample_kept");
    std::set<int32_t> kept;
    auto m = download_i32(mask.t);
    for (uint32_t i = 0; i < V; ++i) {
      EXPECT_TRUE(m[i] == 0 || m[i] == 1) << "mask[" << i << "] = " << m[i] << " (not written?)";
      if (m[i] == 1) kept.insert(int32_t(i));
    }
    return kept;
  }
};

std::string first_difference(const std::set<int32_t>& gpu, const std::set<int32_t>& cpu, std::span<const float> logits) {
  for (int32_t id : gpu)
    if (!cpu.count(id)) return "GPU keeps id " + std::to_string(id) + " (logit " + std::to_string(logits[size_t(id)]) + "), CPU not";
  for (int32_t id : cpu)
    if (!gpu.count(id)) return "CPU keeps id " + std::to_string(id) + " (logit " + std::to_string(logits[size_t(id)]) + "), GPU not";
  return "";
}

TEST_F(Sample, GreedyIsTheCpuArgmax) {
  for (uint32_t V : {37u, 1000u, 152064u})
    for (Dist shape : {Dist::random, Dist::peaked, Dist::flat, Dist::tied_max})
      for (float penalty : {1.0f, 1.3f, 0.7f}) {
        auto logits = make_logits(V, shape, V + 11);
        auto history = make_history(V, V + 5);
        const SamplerOptions o{.repetition_penalty = penalty};
        const int32_t want = infer::Sampler(o).sample(logits, history);
        EXPECT_EQ(draw(inputs(logits, history, 1, 0), o, 1)[0], want)
            << "V " << V << ", " << shape_name(shape) << ", " << describe(o);
      }
}

TEST_F(Sample, GreedyTakesTheFirstOfTiedMaxima) {
  std::vector<float> logits(1000 * 3, -1.0f);
  for (uint32_t id : {2047u, 2048u, 2999u, 5u}) logits[id] = 2.0f;  // 5: in another workgroup than the rest
  EXPECT_EQ(draw(inputs(logits, {}, 1, 0), {}, 1)[0], 5);
}

TEST_F(Sample, KeptSetIsTheCpuKeptSet) {
  for (uint32_t V : {37u, 1000u, 152064u})
    for (Dist shape : {Dist::random, Dist::peaked, Dist::flat, Dist::tied_max})
      for (const SamplerOptions& o : kSampled) {
        auto logits = make_logits(V, shape, V * 3 + 1);
        auto history = make_history(V, V + 7);
        std::set<int32_t> cpu;
        for (const auto& k : infer::Sampler(o).kept(logits, history)) cpu.insert(k.id);
        const auto gpu = gpu_kept(inputs(logits, history, 1, 0), o, V);
        EXPECT_EQ(gpu.size(), cpu.size()) << "V " << V << ", " << shape_name(shape) << ", " << describe(o);
        EXPECT_TRUE(gpu == cpu) << "V " << V << ", " << shape_name(shape) << ", " << describe(o) << ": "
                                << first_difference(gpu, cpu, logits);
      }
}

// Chi-square statistic of `ids` against the probabilities of the CPU's kept set; also fails on an id
// outside it. Returns {statistic, degrees of freedom}.
std::pair<double, int> chi_square(std::span<const int32_t> ids, const std::vector<infer::Sampler::Kept>& kept) {
  double total = 0;
  std::map<int32_t, double> p;
  for (const auto& k : kept) total += k.weight;
  for (const auto& k : kept) p[k.id] = k.weight / total;
  std::map<int32_t, int> counts;
  for (int32_t id : ids) {
    EXPECT_TRUE(p.count(id)) << "drew id " << id << ", outside the CPU's kept set";
    ++counts[id];
  }
  const double n = double(ids.size());
  double stat = 0, pooled_expected = 0, pooled_observed = 0;
  int bins = 0;
  for (const auto& [id, pi] : p) {
    const double e = n * pi, o = counts.count(id) ? counts[id] : 0;
    if (e >= 5) {
      stat += (o - e) * (o - e) / e;
      ++bins;
    } else {
      pooled_expected += e;
      pooled_observed += o;
    }
  }
  if (pooled_expected > 0) {
    stat += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++bins;
  }
  return {stat, std::max(1, bins - 1)};
}

// The chi-square quantile at one-sided p = 1e-6 (Wilson–Hilferty; z = 4.753).
double chi_square_limit(int df) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + 4.753 * std::sqrt(a), 3.0);
}

TEST_F(Sample, DrawsFollowTheCpuProbabilities) {
  for (uint32_t V : {37u, 1000u, 152064u})
    for (Dist shape : {Dist::random, Dist::peaked, Dist::flat, Dist::tied_max})
      for (const SamplerOptions& o : kSampled) {
        // The draw loop costs draws × V / 4 hashes: fewer draws, and only small kept sets, at V = 152,064.
        const bool large = V > 1000;
        if (large && (o.top_k == 0 || o.top_k > 40)) continue;
        const uint32_t draws = large ? 4000 : 100000;
        auto logits = make_logits(V, shape, V * 7 + 3);
        auto history = make_history(V, V + 9);
        const auto kept = infer::Sampler(o).kept(logits, history);
        const auto ids = draw(logits, history, 12345 + V, 0, o, draws);
        const auto [stat, df] = chi_square(ids, kept);
        EXPECT_LT(stat, chi_square_limit(df)) << "V " << V << ", " << shape_name(shape) << ", " << describe(o)
                                              << ": chi-square " << stat << " with " << df << " degrees of freedom";
      }
}

TEST_F(Sample, SeedAndCounterReproduceTheDraw) {
  const uint32_t V = 1000;
  auto logits = make_logits(V, Dist::flat, 77);
  const SamplerOptions o{.temperature = 1.0f, .top_p = 0.9f};
  const uint64_t seed = 0x123456789abcdefull;
  // One dispatch of 16 draws uses counters 40 .. 55: the same ids as 16 one-draw runs at those counters.
  const auto many = draw(inputs(logits, {}, seed, 40), o, 16);
  std::set<int32_t> distinct(many.begin(), many.end());
  EXPECT_GT(distinct.size(), 8u) << "16 counters over ~900 equally likely ids";
  for (uint32_t j = 0; j < 16; ++j) {
    EXPECT_EQ(draw(inputs(logits, {}, seed, 40 + j), o, 1)[0], many[j]) << "counter " << 40 + j;
    EXPECT_EQ(draw(inputs(logits, {}, seed, 40 + j), o, 1)[0], many[j]) << "counter " << 40 + j << ", again";
  }
  // Another seed, same counters: other ids.
  const auto other = draw(inputs(logits, {}, seed + 1, 40), o, 16);
  EXPECT_NE(other, many);
}

// ops::decode_advance (between two decode steps of one program) against its CPU reference, on random (never zero)
// ids, positions, steps, counters and seen bits: the first step and a later one, with and without marking; exact.
TEST_F(Sample, DecodeAdvanceFeedsTheSampledToken) {
  const uint32_t V = 1000, words = ops::sample_seen_words(V), past_slot = 0, steps = 3;
  for (const bool mark : {false, true})
    for (const uint32_t k : {0u, 2u}) {
      const int32_t sampled = test::random_ints(1, 90 + k, 1, int32_t(V) - 1)[0];
      auto ids = test::random_ints(1, 1 + k, 1, 5000), positions = test::random_ints(1, 2 + k, 1, 5000),
           step = test::random_ints(steps, 3 + k, 1, 5000), rng = test::random_ints(ops::kSampleRngElems, 4 + k, 1, 1 << 30),
           seen = test::random_ints(words, 5 + k, 1, 1 << 30), out = test::random_ints(k + 2, 6 + k, 1, 5000);
      auto t = [&](const std::vector<int32_t>& v) {
        Tensor x = Tensor::empty(dev(), {uint32_t(v.size())}, DType::i32);
        upload(x, v);
        return x;
      };
      const Tensor t_sampled = t({sampled}), t_ids = t(ids), t_pos = t(positions), t_step = t(step), t_rng = t(rng),
                   t_seen = t(seen), t_out = t(out);
      test::run(dev(), [&](vk::Recorder& rec) {
        ops::decode_advance(rec, t_sampled, t_ids, t_pos, t_step, past_slot, t_rng, t_seen, mark, V, t_out, k);
      });
      ops::ref::decode_advance(sampled, ids, positions, step, past_slot, rng, seen, mark, V, out, k);
      EXPECT_EQ(download_i32(t_ids), ids);
      EXPECT_EQ(download_i32(t_pos), positions);
      EXPECT_EQ(download_i32(t_step), step);
      EXPECT_EQ(download_i32(t_rng), rng);
      EXPECT_EQ(download_i32(t_seen), seen);
      EXPECT_EQ(download_i32(t_out), out);
      EXPECT_EQ(out[k], sampled);
    }
  vk::Recorder rec(dev());
  auto one = Tensor::empty(dev(), {1}, DType::i32), seen = Tensor::empty(dev(), {words}, DType::i32),
       rng = Tensor::empty(dev(), {ops::kSampleRngElems}, DType::i32), f = Tensor::empty(dev(), {1}, DType::f32);
  test::expect_error_naming([&] { ops::decode_advance(rec, one, one, one, one, 0, rng, seen, true, V, one, 1); }, "out_ids");
  test::expect_error_naming([&] { ops::decode_advance(rec, f, one, one, one, 0, rng, seen, true, V, one, 0); }, "sampled");
  test::expect_error_naming([&] { ops::decode_advance(rec, one, one, one, one, 0, rng, one, true, V, one, 0); }, "seen");
}

TEST_F(Sample, BadInputsRaiseErrors) {
  const uint32_t V = 100;
  auto logits = Tensor::empty(dev(), {V}, DType::f32);
  auto seen = Tensor::empty(dev(), {ops::sample_seen_words(V)}, DType::i32);
  auto seen_short = Tensor::empty(dev(), {1}, DType::i32);
  auto rng = Tensor::empty(dev(), {ops::kSampleRngElems}, DType::i32);
  auto work = Tensor::empty(dev(), {ops::sample_work_elems(V)}, DType::i32);
  auto work_short = Tensor::empty(dev(), {16}, DType::i32);
  auto ids = Tensor::empty(dev(), {1}, DType::i32);
  auto ids2 = Tensor::empty(dev(), {2}, DType::i32);
  vk::Recorder rec(dev());
  const ops::SampleSettings sampled{.temperature = 1.0f};
  test::expect_error_naming([&] { ops::sample_forward(rec, ids, work, logits, seen_short, rng, sampled); }, "sample_forward");
  test::expect_error_naming([&] { ops::sample_forward(rec, ids, work_short, logits, seen, rng, sampled); }, "sample_forward");
  test::expect_error_naming([&] { ops::sample_forward(rec, ids2, work, logits, seen, rng, {}); }, "sample_forward");
  test::expect_error_naming([&] { ops::sample_kept(rec, ids, work, logits, seen, rng, sampled); }, "sample_kept");
  test::expect_error_naming([&] { ops::sample_forward(rec, ids, work, logits, seen, rng, {.temperature = 1.0f, .top_p = 0.0f}); },
                            "sample_forward");
}

}  // namespace
}  // namespace ls
