// The engine against transformers on the tiny golden models of tests/fixtures/make_fixtures.py (random
// weights, f32, made on the CPU with transformers): a Qwen2 (q/k/v biases, tied embeddings, GQA 4/2)
// and a Llama (untied, llama3 rope scaling, GQA 4/1).
// Tolerances: f32 activations: every logit within 1e-4 relative (test::expect_close: |a - e| <=
// 1e-4 (|e| + mean|e|)), through one prefill of the whole prompt, through chunked prefill, and token by
// token through the decode program and the KV cache; the 20 greedy tokens exactly. f16 activations
// (tensor-core path; f16 matmul inputs, f32 accumulation and residual): logits within 2e-2 relative.
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "error.h"
#include "infer/generator.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "support/tensor_values.h"
#include "support/testing.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name; }

struct Expected {
  std::vector<int32_t> ids, greedy;
  std::vector<float> logits, greedy_logits;  // [T, V], [20, V]
};

Expected load_expected(const fs::path& dir) {
  auto st = model::SafeTensors::open(dir / "expected.safetensors");
  return {test::tensor_values<int32_t>(st, "ids"), test::tensor_values<int32_t>(st, "greedy"), test::tensor_values<float>(st, "logits"),
          test::tensor_values<float>(st, "greedy_logits")};
}

std::vector<float> row(const std::vector<float>& m, size_t r, size_t cols) {
  return {m.begin() + ptrdiff_t(r * cols), m.begin() + ptrdiff_t((r + 1) * cols)};
}

void report(const char* what, std::span<const float> a, std::span<const float> e) {
  auto s = test::compare(a, e);
  std::printf("  [measured] %-40s max abs err %.2e, max rel (by max |e|) %.2e\n", what, s.max_abs, s.max_rel);
}

class GeneratorGolden : public test::GpuTest, public ::testing::WithParamInterface<std::string> {};
class GeneratorGoldenAdapter : public test::GpuTest {};

TEST_P(GeneratorGolden, LogitsOfEveryPositionMatchTransformers) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  const size_t V = m.config.vocab_size, T = e.ids.size();
  infer::Generator g(dev(), m, nullptr, {.context = 128});
  auto logits = g.logits_of_every_position(e.ids);
  test::expect_close(logits, e.logits, 1e-4, "logits", {uint32_t(T), uint32_t(V)});
  report("prefill logits, every position", logits, e.logits);
}

TEST_P(GeneratorGolden, TokenByTokenDecodeMatchesTransformers) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  const size_t V = m.config.vocab_size;
  infer::Generator g(dev(), m, nullptr, {.context = 128});
  std::vector<float> all;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    g.decode(e.ids[t]);
    auto l = g.logits();
    all.insert(all.end(), l.begin(), l.end());
  }
  test::expect_close(all, e.logits, 1e-4, "decode logits", {uint32_t(e.ids.size()), uint32_t(V)});
  report("decode logits, token by token", all, e.logits);
}

// The decode program folds every layer's two norms into the products that read them, and RoPE with the KV-cache
// write into the q, k, v pass (ops/matvec_norm.h): its only norm dispatch is the final one, no RoPE pass is left,
// and a layer is two dispatches before attention's and two after (the logits checked above).
TEST_P(GeneratorGolden, DecodeFoldsTheLayerNormsIntoTheProducts) {
  const auto m = model::Model::load(dev(), fixture(GetParam()));
  for (DType act : {DType::f32, DType::f16}) {
    if (act == DType::f16 && !dev().report().float16) continue;
    infer::Generator g(dev(), m, nullptr, {.context = 64, .act = act, .profile = true});
    g.decode(1);
    size_t norms = 0, ropes = 0, qkv = 0, glu = 0;
    for (const vk::Timing& t : g.timings(1)) {
      norms += t.kernel.starts_with("rms_norm");
      ropes += t.kernel.starts_with("rope");
      qkv += t.kernel.starts_with("matvec_norm_qkv");
      glu += t.kernel.starts_with("matvec_norm_silu");
    }
    EXPECT_EQ(norms, 1u) << dtype_name(act);
    EXPECT_EQ(ropes, 0u) << dtype_name(act);
    EXPECT_EQ(qkv, m.config.num_layers) << dtype_name(act);
    EXPECT_EQ(glu, m.config.num_layers) << dtype_name(act);
  }
}

TEST_P(GeneratorGolden, ChunkedPrefillThenGreedyMatchesTransformers) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  const size_t V = m.config.vocab_size, T = e.ids.size();
  // Chunks of at most 16 tokens, the last padded: 66 tokens go as 16 + 16 + 16 + 16 + 2.
  infer::Generator g(dev(), m, nullptr, {.context = 128, .max_chunk = 16, .burst = 1});  // logits every token
  g.prefill(std::span(e.ids).first(T / 2));
  g.prefill(std::span(e.ids).subspan(T / 2));
  auto last = std::vector<float>(g.logits().begin(), g.logits().end());
  test::expect_close(last, row(e.logits, T - 1, V), 1e-4, "chunked prefill logits");
  g.reset();
  std::vector<int32_t> got;
  std::vector<float> step_logits;
  infer::GenerateOptions opts{.max_new_tokens = uint32_t(e.greedy.size())};
  auto stats = g.generate(e.ids, opts, [&](int32_t id) {
    auto l = g.logits();
    step_logits.insert(step_logits.end(), l.begin(), l.end());
    got.push_back(id);
    return true;
  });
  EXPECT_EQ(got, e.greedy);
  EXPECT_EQ(stats.new_tokens, e.greedy.size());
  EXPECT_EQ(stats.stop_reason, "max tokens");
  test::expect_close(step_logits, e.greedy_logits, 1e-4, "greedy step logits");
  report("greedy step logits", step_logits, e.greedy_logits);
  EXPECT_EQ(g.position(), T + e.greedy.size() - 1);
}

// What `chat` does between turns: keep the common prefix of the context (truncate), prefill the rest.
// Tokens that were in the cache past the cut must not leak into the new logits.
TEST_P(GeneratorGolden, TruncateThenPrefillMatchesAFreshPrefill) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  const size_t V = m.config.vocab_size, T = e.ids.size(), cut = T / 2;
  infer::Generator g(dev(), m, nullptr, {.context = 128});
  std::vector<int32_t> other(e.ids.begin(), e.ids.end());
  std::reverse(other.begin() + ptrdiff_t(cut), other.end());  // a different continuation after the cut
  g.prefill(other);
  ASSERT_EQ(g.context().size(), T);
  g.truncate(uint32_t(cut));
  EXPECT_EQ(g.position(), cut);
  g.prefill(std::span(e.ids).subspan(cut));
  EXPECT_TRUE(std::equal(g.context().begin(), g.context().end(), e.ids.begin()));
  test::expect_close(std::vector<float>(g.logits().begin(), g.logits().end()), row(e.logits, T - 1, V), 1e-4,
                     "logits after truncate + prefill");
  EXPECT_THROW(g.truncate(uint32_t(T + 1)), Error);
}

TEST_P(GeneratorGolden, HalfPrecisionActivationsStayClose) {
  if (!dev().report().float16) GTEST_SKIP() << "the device has no f16 arithmetic";
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  infer::Generator g(dev(), m, nullptr, {.context = 128, .act = DType::f16});
  auto logits = g.logits_of_every_position(e.ids);
  test::expect_close(logits, e.logits, 2e-2, "f16 logits");
  report("f16 activations, every position", logits, e.logits);
}

// A PEFT adapter saved by PEFT itself (r 4 on all seven projections, random A and B): the adapted
// model's logits, through prefill and through decode, within 1e-4 of PEFT's.
TEST_F(GeneratorGoldenAdapter, PeftAdapterLogitsMatchPeft) {
  const auto dir = fixture("qwen2_tiny");
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  const auto adapter = model::load_peft_adapter(dev(), m.config, dir / "adapter");
  EXPECT_EQ(adapter.rank, 4u);
  EXPECT_EQ(adapter.targets.size(), 7u);
  auto st = model::SafeTensors::open(dir / "expected_adapter.safetensors");
  const auto expected = test::tensor_values<float>(st, "logits");
  infer::Generator g(dev(), m, &adapter, {.context = 128});
  auto logits = g.logits_of_every_position(e.ids);
  test::expect_close(logits, expected, 1e-4, "adapter logits");
  report("adapter logits, every position", logits, expected);
  g.reset();
  g.prefill(std::span(e.ids).first(e.ids.size() - 1));
  g.decode(e.ids.back());
  const size_t V = m.config.vocab_size;
  test::expect_close(std::vector<float>(g.logits().begin(), g.logits().end()), row(expected, e.ids.size() - 1, V), 1e-4,
                     "adapter decode logits");
  // Without the adapter the logits differ: the adapter is really applied.
  EXPECT_GT(test::compare(logits, e.logits).max_abs, 1e-2);
}

// generate() samples on the device: with greedy + repetition penalty, each id is the CPU Sampler's on the
// same logits and context, also after truncate (the seen set follows the context: rebuilt when cut).
// A seeded sampled generation repeats its tokens.
TEST_P(GeneratorGolden, GpuSamplingFollowsTheContext) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  infer::Generator g(dev(), m, nullptr, {.context = 128, .burst = 1});  // the CPU sampler reads each token's logits
  const infer::SamplerOptions penalised{.repetition_penalty = 1.8f};
  auto run = [&](std::span<const int32_t> prompt, const infer::SamplerOptions& o) {
    std::vector<int32_t> got;
    int mismatches = 0;
    const auto st = g.generate(prompt, {.max_new_tokens = 12, .sampling = o}, [&](int32_t id) {
      if (o.temperature == 0.0f && id != infer::Sampler(o).sample(g.logits(), g.context())) ++mismatches;
      got.push_back(id);
      return true;
    });
    EXPECT_EQ(mismatches, 0) << "GPU ids that are not the CPU Sampler's";
    // The time to the first token: the prefill and one sample, within the whole call.
    EXPECT_GE(st.first_token_seconds, st.prefill_seconds);
    EXPECT_LE(st.first_token_seconds, st.prefill_seconds + st.decode_seconds + 1e-3);
    return got;
  };
  const auto first = run(e.ids, penalised);
  g.truncate(uint32_t(e.ids.size() / 2));
  const auto second = run(std::span(e.ids).subspan(e.ids.size() / 2), penalised);
  EXPECT_EQ(first, second) << "the same context after truncate: the same tokens";
  const infer::SamplerOptions sampled{.temperature = 1.0f, .top_p = 0.95f, .seed = 7};
  g.reset();
  const auto a = run(e.ids, sampled);
  g.reset();
  EXPECT_EQ(run(e.ids, sampled), a);
}

// Bursts (several tokens decoded a submit, the sampled token fed to the next forward on the device) give the tokens,
// contexts and stop reasons of one token a submit: greedy, greedy with a repetition penalty, seeded top-p draws; a
// stop inside a burst (eos, on_token) keeps the tokens before it in the context; then more turns go on from there.
TEST_P(GeneratorGolden, BurstsDecodeWhatOneTokenASubmitDecodes) {
  const auto dir = fixture(GetParam());
  const Expected e = load_expected(dir);
  const auto m = model::Model::load(dev(), dir);
  infer::Generator single(dev(), m, nullptr, {.context = 128, .burst = 1});
  infer::Generator burst(dev(), m, nullptr, {.context = 128, .burst = 4});
  struct Turn {
    std::vector<int32_t> ids;
    infer::GenerateStats stats;
  };
  // stop_after: on_token returns false at that token (0: never).
  auto turn = [&](infer::Generator& g, std::span<const int32_t> prompt, const infer::GenerateOptions& o, size_t stop_after) {
    Turn t;
    t.stats = g.generate(prompt, o, [&](int32_t id) {
      t.ids.push_back(id);
      return stop_after == 0 || t.ids.size() < stop_after;
    });
    return t;
  };
  auto same = [&](const Turn& a, const Turn& b, const std::string& what) {
    EXPECT_EQ(a.ids, b.ids) << what;
    EXPECT_EQ(a.stats.stop_reason, b.stats.stop_reason) << what;
    EXPECT_EQ(a.stats.new_tokens, b.stats.new_tokens) << what;
    EXPECT_EQ(single.position(), burst.position()) << what;
    EXPECT_TRUE(std::ranges::equal(single.context(), burst.context())) << what;
  };
  const infer::SamplerOptions greedy{}, penalised{.repetition_penalty = 1.8f},
      sampled{.temperature = 1.0f, .top_p = 0.95f, .seed = 11};
  for (const auto& o : {greedy, penalised, sampled}) {
    single.reset();
    burst.reset();
    const infer::GenerateOptions go{.max_new_tokens = 19, .sampling = o};
    const Turn a = turn(single, e.ids, go, 0), b = turn(burst, e.ids, go, 0);
    same(a, b, "19 tokens");
    EXPECT_EQ(a.stats.bursts, 0u);
    EXPECT_EQ(b.stats.bursts, 4u) << "the first token alone, then 4 bursts of 4, then 2 alone";
    if (o.temperature == 0.0f && o.repetition_penalty == 1.0f) {
      EXPECT_EQ(a.ids, std::vector(e.greedy.begin(), e.greedy.begin() + 19));
    }
    // A second turn on the kept context, stopped by on_token at its 6th token (inside the second burst).
    const std::vector<int32_t> more = {e.ids[1], e.ids[2], e.ids[3]};
    same(turn(single, more, go, 6), turn(burst, more, go, 6), "stopped at the 6th token");
    // A third whose eos is its 7th token: the 7th token of a run with no eos.
    infer::GenerateOptions with_eos = go;
    const Turn probe = turn(single, more, go, 0);
    single.truncate(single.position() - uint32_t(more.size()) - (probe.stats.new_tokens - 1));
    burst.truncate(single.position());
    ASSERT_TRUE(std::ranges::equal(single.context(), burst.context()));
    with_eos.stop_ids = {probe.ids.at(6)};
    same(turn(single, more, with_eos, 0), turn(burst, more, with_eos, 0), "eos as the 7th token");
  }
  // Near the end of the cache: the burst stops where one token a submit says "context full".
  single.reset();
  burst.reset();
  const infer::GenerateOptions go{.max_new_tokens = 200};
  const Turn a = turn(single, e.ids, go, 0), b = turn(burst, e.ids, go, 0);
  same(a, b, "to the end of the cache");
  EXPECT_EQ(a.stats.stop_reason, "context full");
}

INSTANTIATE_TEST_SUITE_P(Models, GeneratorGolden, ::testing::Values("qwen2_tiny", "llama_tiny"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ls
