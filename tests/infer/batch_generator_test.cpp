// Batched generation (infer::BatchGenerator: B sequences decoding together, each with its own KV cache, slots
// refilled as sequences end) against the one-sequence Generator on the tiny models of tests/fixtures/models
// (random weights; Qwen2, Llama, Qwen3's per-head norms, Phi-3, Gemma 3's sliding window of 8), and against
// transformers' 20 greedy tokens where the fixture has them (qwen2_tiny, llama_tiny). Greedy ids are compared
// exactly: the same tokens as the one-sequence generator, prompt by prompt, whatever slot and step each ran in.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "error.h"
#include "infer/batch_generator.h"
#include "model/safetensors.h"
#include "support/tensor_values.h"
#include "support/testing.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name; }

// Seven prompts of 1 to 30 tokens, seeded.
std::vector<std::vector<int32_t>> prompts_for(uint32_t vocab) {
  std::vector<std::vector<int32_t>> prompts;
  uint32_t state = 12345;
  for (uint32_t len : {9u, 1u, 30u, 4u, 17u, 2u, 11u}) {
    std::vector<int32_t> p;
    for (uint32_t i = 0; i < len; ++i) {
      state = state * 1664525u + 1013904223u;
      p.push_back(int32_t((state >> 8) % vocab));
    }
    prompts.push_back(p);
  }
  return prompts;
}

struct BatchRun {
  std::map<size_t, infer::BatchReply> replies;
  std::map<size_t, std::vector<int32_t>> streamed;  // what on_token saw
  infer::BatchStats stats;
};

// Sequence i stops itself ("stopped") after its limit's tokens, when it has one.
BatchRun run_batched(infer::BatchGenerator& g, const std::vector<std::vector<int32_t>>& prompts,
                const infer::GenerateOptions& options, const std::vector<uint32_t>& limits = {}) {
  BatchRun r;
  r.stats = g.generate(
      prompts, options,
      [&](size_t i, int32_t id) {
        r.streamed[i].push_back(id);
        return limits.empty() || r.streamed[i].size() < limits[i];
      },
      [&](size_t i, infer::BatchReply&& reply) {
        EXPECT_FALSE(r.replies.count(i)) << "prompt " << i << " finished twice";
        r.replies[i] = std::move(reply);
      });
  return r;
}

std::vector<int32_t> one_at_a_time(infer::Generator& g, const std::vector<int32_t>& prompt,
                                   const infer::GenerateOptions& options, uint32_t limit, std::string& stop) {
  std::vector<int32_t> ids;
  g.reset();
  stop = g.generate(prompt, options, [&](int32_t id) {
           ids.push_back(id);
           return limit == 0 || ids.size() < limit;
         }).stop_reason;
  return ids;
}

class BatchGeneratorTest : public test::GpuTest, public ::testing::WithParamInterface<std::string> {
 protected:
  // phi3_tiny's longrope switches factors past 32 tokens, which one program for all slots cannot follow: its
  // sequences stay within 32 (the 30-token prompt's reply ends "context full" after 3 tokens, as with one).
  uint32_t context() const { return GetParam() == "phi3_tiny" ? 32 : 64; }
};

TEST_P(BatchGeneratorTest, GreedyRepliesAreTheOneSequenceGeneratorsInEverySlot) {
  const auto m = model::Model::load(dev(), fixture(GetParam()));
  const auto prompts = prompts_for(m.config.vocab_size);
  // Limits make the sequences end at different steps, so that slots are refilled mid-run; the batch of 3 is
  // fewer slots than prompts.
  const std::vector<uint32_t> limits{5, 12, 3, 12, 7, 1, 12};
  const infer::GenerateOptions options{.max_new_tokens = 10};
  infer::Generator single(dev(), m, nullptr, {.context = context()});
  infer::BatchGenerator batched(dev(), m, nullptr, {.context = context()}, 3);
  const BatchRun r = run_batched(batched, prompts, options, limits);
  ASSERT_EQ(r.replies.size(), prompts.size());
  uint32_t new_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::string stop;
    const auto want = one_at_a_time(single, prompts[i], options, limits[i], stop);
    const auto& got = r.replies.at(i);
    EXPECT_EQ(got.ids, want) << GetParam() << " prompt " << i;
    EXPECT_EQ(r.streamed.at(i), got.ids) << "on_token saw every token";
    EXPECT_EQ(got.stop_reason, stop) << "prompt " << i;
    EXPECT_EQ(got.prompt_tokens, prompts[i].size());
    new_tokens += uint32_t(got.ids.size());
  }
  EXPECT_EQ(r.stats.new_tokens, new_tokens);
  EXPECT_EQ(r.stats.prompts, prompts.size());
  EXPECT_GT(r.stats.steps, 0u);
  EXPECT_LT(r.stats.steps, new_tokens) << "steps decode several sequences at once";
}

// An end-of-sequence id ends a reply (not passed on), as in Generator::generate; one slot for all prompts works.
TEST_P(BatchGeneratorTest, EosEndsAReplyAndOneSlotServesAll) {
  const auto m = model::Model::load(dev(), fixture(GetParam()));
  const auto prompts = prompts_for(m.config.vocab_size);
  infer::Generator single(dev(), m, nullptr, {.context = context()});
  std::string stop;
  const auto plain = one_at_a_time(single, prompts[0], {.max_new_tokens = 8}, 0, stop);
  ASSERT_EQ(plain.size(), 8u);
  const infer::GenerateOptions options{.max_new_tokens = 8, .stop_ids = {plain[3]}};
  infer::BatchGenerator batched(dev(), m, nullptr, {.context = context()}, 1);
  const BatchRun r = run_batched(batched, prompts, options);
  ASSERT_EQ(r.replies.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(r.replies.at(i).ids, one_at_a_time(single, prompts[i], options, 0, stop)) << "prompt " << i;
  EXPECT_EQ(r.replies.at(0).stop_reason, "eos");
  EXPECT_EQ(r.replies.at(0).ids, std::vector<int32_t>(plain.begin(), plain.begin() + 3));
}

INSTANTIATE_TEST_SUITE_P(Models, BatchGeneratorTest,
                         ::testing::Values("qwen2_tiny", "llama_tiny", "qwen3_tiny", "phi3_tiny", "gemma3_tiny"),
                         [](const auto& p) { return p.param; });

// transformers' 20 greedy tokens after the fixture's prompt, from a slot beside others (f32 activations).
class BatchGeneratorGolden : public test::GpuTest, public ::testing::WithParamInterface<std::string> {};
TEST_P(BatchGeneratorGolden, GreedyMatchesTransformersBesideOtherSequences) {
  const auto dir = fixture(GetParam());
  auto st = model::SafeTensors::open(dir / "expected.safetensors");
  const auto ids = test::tensor_values<int32_t>(st, "ids"), greedy = test::tensor_values<int32_t>(st, "greedy");
  const auto m = model::Model::load(dev(), dir);
  auto prompts = prompts_for(m.config.vocab_size);
  prompts.insert(prompts.begin() + 2, ids);
  infer::BatchGenerator batched(dev(), m, nullptr, {.context = 96}, 4);
  const BatchRun r = run_batched(batched, prompts, {.max_new_tokens = uint32_t(greedy.size())});
  EXPECT_EQ(r.replies.at(2).ids, greedy);
}
INSTANTIATE_TEST_SUITE_P(Models, BatchGeneratorGolden, ::testing::Values("qwen2_tiny", "llama_tiny"),
                         [](const auto& p) { return p.param; });

// Sampling other than plain greedy samples each row on the CPU: top-k 1 is greedy (through the downloaded logits),
// and a seeded draw repeats run after run.
class BatchGeneratorSampling : public test::GpuTest {};
TEST_F(BatchGeneratorSampling, TopOneIsGreedyAndSeededDrawsRepeat) {
  const auto m = model::Model::load(dev(), fixture("qwen2_tiny"));
  const auto prompts = prompts_for(m.config.vocab_size);
  infer::BatchGenerator batched(dev(), m, nullptr, {.context = 64}, 4);
  const BatchRun greedy = run_batched(batched, prompts, {.max_new_tokens = 6});
  const BatchRun top1 = run_batched(batched, prompts, {.max_new_tokens = 6, .sampling = {.temperature = 0.8f, .top_k = 1}});
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(top1.replies.at(i).ids, greedy.replies.at(i).ids) << i;
  const infer::GenerateOptions sampled{.max_new_tokens = 6, .sampling = {.temperature = 1.5f, .seed = 3}};
  const BatchRun a = run_batched(batched, prompts, sampled), b = run_batched(batched, prompts, sampled);
  bool differs = false;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(a.replies.at(i).ids, b.replies.at(i).ids) << i;
    differs = differs || a.replies.at(i).ids != greedy.replies.at(i).ids;
  }
  EXPECT_TRUE(differs) << "temperature 1.5 chose the greedy token every time";
}

TEST_F(BatchGeneratorSampling, RefusesWhatCannotRun) {
  const auto m = model::Model::load(dev(), fixture("qwen2_tiny"));
  EXPECT_THROW(infer::BatchGenerator(dev(), m, nullptr, {.context = 64}, 0), Error);
  infer::BatchGenerator batched(dev(), m, nullptr, {.context = 16}, 2);
  const std::vector<std::vector<int32_t>> too_long{std::vector<int32_t>(17, 5)}, empty{{}};
  try {
    run_batched(batched, too_long, {.max_new_tokens = 4});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the context of 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_batched(batched, empty, {.max_new_tokens = 4}), Error);
  // A reply that fills the context stops there.
  const BatchRun full = run_batched(batched, {std::vector<int32_t>(14, 5)}, {.max_new_tokens = 10});
  EXPECT_EQ(full.replies.at(0).stop_reason, "context full");
  EXPECT_EQ(full.replies.at(0).ids.size(), 3u);  // tokens 15, 16 decoded into the cache; the 17th has no room
  // longrope past its original context: refused, with the way out.
  const auto phi3 = model::Model::load(dev(), fixture("phi3_tiny"));
  infer::BatchGenerator long_rope(dev(), phi3, nullptr, {.context = 64}, 2);
  try {
    run_batched(long_rope, {{1, 2, 3}}, {.max_new_tokens = 40});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("longrope"), std::string::npos) << e.what();
  }
  EXPECT_EQ(run_batched(long_rope, {{1, 2, 3}}, {.max_new_tokens = 20}).replies.at(0).ids.size(), 20u);
}

}  // namespace
}  // namespace ls
