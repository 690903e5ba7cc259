// The recorded forward (model/layer.h through infer::Generator) of each family against a CPU forward in
// double written from transformers' modeling code (support/reference_model.h), on tiny models with random
// weights and irregular sizes (support/tiny_model.h): Qwen3, Phi-3, a Mistral whose sliding window (5) is
// shorter than the sequences, and a Gemma 3 (window 5 on its sliding layers); and on
// the golden fixtures themselves, where the reference must also match transformers (which checks the
// reference). Tolerances as in tests/infer/generator_golden_test.cpp: f32, every logit within 1e-4
// relative (test::expect_close), through one prefill, through chunked prefill and token by token.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "infer/generator.h"
#include "model/gguf_export.h"
#include "model/merge.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "support/random_adapter.h"
#include "support/reference_model.h"
#include "support/testing.h"
#include "support/tiny_model.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Qwen3: q/k norms, no biases, head_dim 24 independent of hidden 80 / 4 heads (H·D = 96 != C), GQA 4/2,
// tied embeddings.
json qwen3_config() {
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 301, "hidden_size": 80,
    "intermediate_size": 136, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 24, "max_position_embeddings": 256, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "attention_bias": false, "hidden_act": "silu", "torch_dtype": "float32"})");
}

// Phi-3: fused qkv_proj and gate_up_proj, untied, GQA 4/2, head_dim 18, longrope with irregular factors
// (original context 32, max 128: attention factor sqrt(1 + ln 4 / ln 32)).
json phi3_config() {
  json c = json::parse(R"({
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": 301, "hidden_size": 72,
    "intermediate_size": 100, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 128, "original_max_position_embeddings": 32, "rope_theta": 10000.0,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": false, "hidden_act": "silu", "sliding_window": null,
    "torch_dtype": "float32"})");
  json s = json::array(), l = json::array();
  for (int i = 0; i < 9; ++i) {
    s.push_back(1.0 + 0.15 * i + 0.05 * (i % 3));
    l.push_back(1.5 + 0.9 * i + 0.3 * ((i * 7) % 4));
  }
  c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", s}, {"long_factor", l}};
  return c;
}

// Mistral with a sliding window of 5, shorter than the sequences: each token sees itself and the 4 before.
json mistral_window_config() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "vocab_size": 301, "hidden_size": 64, "intermediate_size": 120,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 5,
    "max_position_embeddings": 256, "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": false})");
}

// Gemma 3: head_dim 20 with hidden 72 and 4 heads (H·D = 80 != C), GQA 4/2, three layers sliding / full /
// sliding with a window of 5 and their own RoPE base, linear scaling 3 on the full one, query_pre_attn_scalar
// 30, final logit softcap 5, tied.
json gemma3_config() {
  return json::parse(R"({
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 301, "hidden_size": 72,
    "intermediate_size": 100, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 20, "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 30,
    "final_logit_softcapping": 5.0, "sliding_window": 5, "hidden_activation": "gelu_pytorch_tanh",
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 3.0, "rope_theta": 100000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
    "tie_word_embeddings": true, "torch_dtype": "float32"})");
}

struct Family {
  const char* name;
  json (*config)();
};
const Family kGenerated[] = {{"qwen3", qwen3_config},
                             {"phi3", phi3_config},
                             {"mistral_window", mistral_window_config},
                             {"gemma3", gemma3_config}};

void report(const char* what, std::span<const float> a, std::span<const float> e) {
  auto s = test::compare(a, e);
  std::printf("  [measured] %-44s max abs err %.2e, max rel (by max |e|) %.2e\n", what, s.max_abs, s.max_rel);
}

// A prompt-like sequence of ids: long enough for several chunks of 8.
std::vector<int32_t> ids_for(const model::ModelConfig& c, size_t n) {
  return test::random_ints(n, 17, 0, int32_t(c.vocab_size) - 1);
}

class GeneratedModel : public test::GpuTest, public ::testing::WithParamInterface<Family> {
 protected:
  void SetUp() override { test::write_random_model(dir_.path(), GetParam().config(), 1000); }
  test::TempDir dir_;
};

TEST_P(GeneratedModel, PrefillMatchesTheReference) {
  const auto m = model::Model::load(dev(), dir_.path());
  const auto st = model::SafeTensors::open(dir_.path());
  const auto ids = ids_for(m.config, 21);
  const auto want = test::ReferenceModel(m.config, st).logits(ids);
  infer::Generator g(dev(), m, nullptr, {.context = 64});
  const auto got = g.logits_of_every_position(ids);
  test::expect_close(got, want, 1e-4, "prefill logits", {uint32_t(ids.size()), m.config.vocab_size});
  report("prefill vs CPU reference", got, want);
}

// An untied embedding table kept in system memory (model::embedding_in_host_memory; on a discrete GPU by
// default, forced here): the same logits, and the weights' device bytes leave it out. A tied table stays.
TEST_P(GeneratedModel, EmbeddingTableInSystemMemoryGivesTheSameLogits) {
  ::setenv("LORASTUDIO_EMBED_ON_GPU", "1", 1);
  const auto on_device = model::Model::load(dev(), dir_.path());
  ::unsetenv("LORASTUDIO_EMBED_ON_GPU");
  ::setenv("LORASTUDIO_EMBED_IN_HOST", "1", 1);
  const auto m = model::Model::load(dev(), dir_.path());
  ::unsetenv("LORASTUDIO_EMBED_IN_HOST");
  const bool tied = m.config.tie_word_embeddings;
  EXPECT_EQ(m.weights.embed_in_host, !tied);
  EXPECT_FALSE(on_device.weights.embed_in_host);
  EXPECT_EQ(m.weights.device_bytes() + (tied ? 0 : m.weights.embed.bytes()), on_device.weights.device_bytes());
  const auto st = model::SafeTensors::open(dir_.path());
  const auto ids = ids_for(m.config, 21);
  const auto want = test::ReferenceModel(m.config, st).logits(ids);
  infer::Generator g(dev(), m, nullptr, {.context = 64});
  const auto got = g.logits_of_every_position(ids);
  test::expect_close(got, want, 1e-4, "prefill logits, embedding in system memory",
                     {uint32_t(ids.size()), m.config.vocab_size});
}

TEST_P(GeneratedModel, DecodeAndChunkedPrefillMatchTheReference) {
  const auto m = model::Model::load(dev(), dir_.path());
  const auto st = model::SafeTensors::open(dir_.path());
  const auto ids = ids_for(m.config, 21);
  const auto want = test::ReferenceModel(m.config, st).logits(ids);
  const size_t V = m.config.vocab_size;
  infer::Generator g(dev(), m, nullptr, {.context = 64, .max_chunk = 8});
  std::vector<float> decoded;
  for (int32_t id : ids) {
    g.decode(id);
    decoded.insert(decoded.end(), g.logits().begin(), g.logits().end());
  }
  test::expect_close(decoded, want, 1e-4, "decode logits", {uint32_t(ids.size()), uint32_t(V)});
  report("token-by-token decode vs CPU reference", decoded, want);
  g.reset();
  g.prefill(std::span(ids).first(13));
  g.prefill(std::span(ids).subspan(13));
  const std::vector<float> last(g.logits().begin(), g.logits().end());
  const std::vector<float> want_last(want.end() - ptrdiff_t(V), want.end());
  test::expect_close(last, want_last, 1e-4, "chunked prefill, last logits");
}

// longrope past the original context (32): one forward over 45 tokens uses the long factors throughout;
// decoding token by token, the step that passes position 32 computes the whole context again with them
// (what transformers' Phi3ForCausalLM.prepare_inputs_for_generation means to do), so every step's logits
// are those of one forward over its prefix. Both against the reference; and the long factors do change
// the logits.
class Phi3LongRope : public test::GpuTest {
 protected:
  void SetUp() override { test::write_random_model(dir_.path(), phi3_config(), 1000); }
  test::TempDir dir_;
};

TEST_F(Phi3LongRope, BeyondTheOriginalContextMatchesTheReference) {
  const auto m = model::Model::load(dev(), dir_.path());
  ASSERT_EQ(m.config.rope_scaling.type, model::RopeScaling::Type::LongRope);
  const auto st = model::SafeTensors::open(dir_.path());
  const auto ids = ids_for(m.config, 45);
  const size_t V = m.config.vocab_size, T = ids.size(), orig = m.config.rope_scaling.original_max_position_embeddings;
  ASSERT_GT(T, orig);
  const test::ReferenceModel ref(m.config, st);
  const auto want = ref.logits(ids);
  infer::Generator g(dev(), m, nullptr, {.context = 64, .max_chunk = 16});
  const auto got = g.logits_of_every_position(ids);
  test::expect_close(got, want, 1e-4, "long prefill logits", {uint32_t(T), uint32_t(V)});
  report("prefill of 45 (long factors) vs reference", got, want);
  const auto short_prefix = ref.logits(std::span(ids).first(orig));
  EXPECT_GT(test::compare(short_prefix, std::span(want).first(orig * V)).max_abs, 1e-2) << "long = short factors?";

  std::vector<float> want_decode;
  for (size_t t = 1; t <= T; ++t) {
    const auto prefix = ref.logits(std::span(ids).first(t));
    want_decode.insert(want_decode.end(), prefix.end() - ptrdiff_t(V), prefix.end());
  }
  g.reset();
  std::vector<float> decoded;
  for (int32_t id : ids) {
    g.decode(id);
    decoded.insert(decoded.end(), g.logits().begin(), g.logits().end());
  }
  test::expect_close(decoded, want_decode, 1e-4, "decode logits across the original context",
                     {uint32_t(T), uint32_t(V)});
  report("decode across position 32 vs reference", decoded, want_decode);
  // Back within the original context (chat's truncate): the keys are rotated with the short factors again.
  g.truncate(20);
  g.prefill(std::span(ids).subspan(20, 5));
  const auto want_25 = ref.logits(std::span(ids).first(25));
  test::expect_close(std::vector<float>(g.logits().begin(), g.logits().end()),
                     std::vector<float>(want_25.end() - ptrdiff_t(V), want_25.end()), 1e-4,
                     "after truncate within the original context");
  // A chunked prefill of the whole prompt is one call: the long factors for all of it, as one forward.
  g.reset();
  g.prefill(ids);
  test::expect_close(std::vector<float>(g.logits().begin(), g.logits().end()),
                     std::vector<float>(want.end() - ptrdiff_t(V), want.end()), 1e-4, "chunked long prefill");
}

// A random adapter on every projection, saved in PEFT's format and read back, changes the logits; merged
// into the weights (export --merge) it gives the same logits as applied beside them (5e-5 relative, as
// merge_test on the golden Qwen2).
TEST_P(GeneratedModel, PeftRoundTripAndMergeGiveTheAdaptedLogits) {
  const auto m = model::Model::load(dev(), dir_.path());
  const auto ids = ids_for(m.config, 11);
  const auto random = test::random_adapter(dev(), m.config, 4, 300);
  model::save_peft_adapter(random, m.config, dir_ / "adapter", "");
  const auto adapter = model::load_peft_adapter(dev(), m.config, dir_ / "adapter");
  EXPECT_EQ(adapter.targets.size(), random.targets.size());
  infer::Generator with(dev(), m, &adapter, {.context = 32});
  const auto want = with.logits_of_every_position(ids);
  infer::Generator without(dev(), m, nullptr, {.context = 32});
  EXPECT_GT(test::compare(without.logits_of_every_position(ids), want).max_abs, 1e-2) << "the adapter does nothing?";
  const model::MergeReport r = model::merge_adapter(dir_.path(), dir_ / "adapter", dir_ / "merged");
  EXPECT_EQ(r.merged, m.config.num_layers * random.targets.size());
  const auto merged = model::Model::load(dev(), dir_ / "merged");
  infer::Generator plain(dev(), merged, nullptr, {.context = 32});
  const auto got = plain.logits_of_every_position(ids);
  test::expect_close(got, want, 5e-5, "merged vs base + adapter logits", {uint32_t(ids.size()), m.config.vocab_size});
  report("merged vs base + adapter", got, want);
}

// (Phi-3's and Gemma 3's GGUF files are checked by llama.cpp itself: tests/model/gguf_llamacpp_test.cpp.)

INSTANTIATE_TEST_SUITE_P(Families, GeneratedModel, ::testing::ValuesIn(kGenerated),
                         [](const auto& p) { return std::string(p.param.name); });

// The reference itself against transformers: the golden fixtures' logits (tests/fixtures/make_fixtures.py,
// make_arch_fixtures.py).
class ReferenceOnGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferenceOnGolden, MatchesTransformers) {
  const fs::path dir = test::fixtures_dir() / "models" / GetParam();
  const auto c = model::load_config(dir);
  const auto st = model::SafeTensors::open(dir);
  const auto expected = model::SafeTensors::open(dir / "expected.safetensors");
  const auto& ids_info = expected.at("ids");
  std::vector<int32_t> ids(ids_info.bytes.size() / 4);
  std::memcpy(ids.data(), ids_info.bytes.data(), ids.size() * 4);
  const auto& l = expected.at("logits");
  std::vector<float> want(l.bytes.size() / 4);
  std::memcpy(want.data(), l.bytes.data(), want.size() * 4);
  const auto got = test::ReferenceModel(c, st).logits(ids);
  test::expect_close(got, want, 1e-4, "reference logits", {uint32_t(ids.size()), c.vocab_size});
  report("CPU reference vs transformers", got, want);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReferenceOnGolden,
                         ::testing::Values("qwen2_tiny", "llama_tiny", "qwen3_tiny", "phi3_tiny", "gemma3_tiny"));

}  // namespace
}  // namespace ls
