// The families of issue 22 against transformers and PEFT on the tiny golden models of
// tests/fixtures/make_arch_fixtures.py (random weights, irregular sizes, f32, made on the CPU):
//   qwen3_tiny  q/k norms, head_dim 24 != hidden 80 / 4 heads, tied
//   phi3_tiny   fused qkv_proj / gate_up_proj, longrope (original context 32: the prompt (16 tokens) stays
//               below it, its greedy tokens cross it, long_ids (45 tokens) is past it in one forward)
//   gemma3_tiny RMSNorm x·(1 + w), four norms a layer, q/k norms, GELU-tanh MLP, embedding ·√64,
//               query_pre_attn_scalar 20, layers sliding (window 8 < the prompt's 22 tokens, RoPE base 1e4) /
//               full (1e6, linear factor 2) / sliding, final logit softcap 8, tied
// Gemma 3 also as a Gemma3ForConditionalGeneration folder: the same weights under the language model's names
// of transformers 5 and of older versions, a vision tensor beside them, the text config nested: the same
// logits as the plain folder's, to the bit, with and without PEFT's adapter (its keys renamed as PEFT names
// that model's modules), and the adapter saved and merged into that folder.
// Phi-3's greedy steps past the original context: transformers 5.17's Phi3ForCausalLM drops the KV cache there
// ("enforce re-compute cache") but still feeds only the newest token, so each such step attends to itself
// alone (measured: its logits equal a lone-token forward at that position to 1.4e-6, and differ from a
// forward over the prefix by ~5). We compute what that code means to do, the whole prefix again with the
// long factors (infer/generator.cpp): those steps are checked against the CPU reference (support/
// reference_model.h, which matches transformers on every fixture's one-forward logits) with transformers'
// tokens fed in, and the steps before against transformers.
// Tolerances as tests/infer/generator_golden_test.cpp: every logit within 1e-4 relative (test::expect_close:
// |a - e| <= 1e-4 (|e| + mean|e|)) through one prefill, token by token, and with PEFT's adapter; the 20 greedy
// tokens exactly; the adapter's loss on the prompt within 1e-5 relative and its LoRA gradients within 1e-4
// (test::expect_close), as tests/train/train_golden_test.cpp (where the device's training attention takes f16
// products, 1e-4 and each matrix within 5e-3 of its largest gradient: see the test).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "infer/generator.h"
#include "model/gemma3_mm_folder.h"
#include "model/gguf_export.h"
#include "model/merge.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "model/training.h"
#include "ops/attention_flash.h"
#include "ops/attention_products.h"
#include "support/reference_model.h"
#include "model/model_files.h"
#include "support/tensor_values.h"
#include "support/testing.h"
#include "train/optimizer_update.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name; }

void report(const char* what, std::span<const float> a, std::span<const float> e) {
  auto s = test::compare(a, e);
  std::printf("  [measured] %-44s max abs err %.2e, max rel (by max |e|) %.2e\n", what, s.max_abs, s.max_rel);
}

class ArchGolden : public test::GpuTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    dir_ = fixture(GetParam());
    expected_ = std::make_unique<model::SafeTensors>(model::SafeTensors::open(dir_ / "expected.safetensors"));
    ids_ = test::tensor_values<int32_t>(*expected_, "ids");
    model_ = std::make_unique<model::Model>(model::Model::load(dev(), dir_));
  }
  fs::path dir_;
  std::unique_ptr<model::SafeTensors> expected_;
  std::vector<int32_t> ids_;
  std::unique_ptr<model::Model> model_;
};

TEST_P(ArchGolden, PrefillAndDecodeLogitsMatchTransformers) {
  const auto want = test::tensor_values<float>(*expected_, "logits");
  const uint32_t T = uint32_t(ids_.size()), V = model_->config.vocab_size;
  infer::Generator g(dev(), *model_, nullptr, {.context = 128, .max_chunk = 16});
  const auto got = g.logits_of_every_position(ids_);
  test::expect_close(got, want, 1e-4, "prefill logits", {T, V});
  report("prefill logits, every position", got, want);
  g.reset();
  std::vector<float> decoded;
  for (int32_t id : ids_) {
    g.decode(id);
    decoded.insert(decoded.end(), g.logits().begin(), g.logits().end());
  }
  test::expect_close(decoded, want, 1e-4, "decode logits", {T, V});
  report("decode logits, token by token", decoded, want);
}

TEST_P(ArchGolden, GreedyTokensAndTheirLogitsMatchTransformers) {
  const auto greedy = test::tensor_values<int32_t>(*expected_, "greedy");
  const auto greedy_logits = test::tensor_values<float>(*expected_, "greedy_logits");
  const size_t T = ids_.size(), V = model_->config.vocab_size;
  // Step k's logits come from a forward ending at T + k: the steps before longrope's switch (all of them
  // without longrope) against transformers.
  size_t before = 0;
  while (before < greedy.size() && !model::rope_uses_long_factors(model_->config, T + before)) ++before;
  infer::Generator g(dev(), *model_, nullptr, {.context = 128, .max_chunk = 16, .burst = 1});
  std::vector<int32_t> got;
  std::vector<float> step_logits;
  infer::GenerateOptions opts{.max_new_tokens = uint32_t(before)};
  g.generate(ids_, opts, [&](int32_t id) {
    step_logits.insert(step_logits.end(), g.logits().begin(), g.logits().end());
    got.push_back(id);
    return true;
  });
  EXPECT_EQ(got, std::vector<int32_t>(greedy.begin(), greedy.begin() + ptrdiff_t(before)));
  const std::vector<float> want(greedy_logits.begin(), greedy_logits.begin() + ptrdiff_t(before * V));
  test::expect_close(step_logits, want, 1e-4, "greedy step logits");
  report("greedy step logits (before any switch)", step_logits, want);
  std::printf("  [measured] %zu of %zu greedy steps before longrope's switch\n", before, greedy.size());
  if (before == greedy.size()) return;
  // The rest: transformers' tokens fed in, each step against the reference's forward over its prefix.
  const auto st = model::SafeTensors::open(dir_);
  const test::ReferenceModel ref(model_->config, st);
  std::vector<int32_t> seq(ids_);
  seq.insert(seq.end(), greedy.begin(), greedy.begin() + ptrdiff_t(before));
  g.reset();
  g.prefill(std::span(seq).first(seq.size() - 1));
  std::vector<float> after, want_after;
  for (size_t k = before; k < greedy.size(); ++k) {
    g.decode(seq.back());
    after.insert(after.end(), g.logits().begin(), g.logits().end());
    const auto r = ref.logits(seq);
    want_after.insert(want_after.end(), r.end() - ptrdiff_t(V), r.end());
    seq.push_back(greedy[k]);
  }
  test::expect_close(after, want_after, 1e-4, "greedy step logits past the switch (reference)");
  report("steps past the switch vs CPU reference", after, want_after);
}

// Phi-3's long sequence: one forward of 45 tokens past the original context of 32 (long factors throughout),
// through logits_of_every_position and through a chunked prefill.
class Phi3Golden : public test::GpuTest {};

TEST_F(Phi3Golden, LongSequenceLogitsMatchTransformers) {
  const auto m = model::Model::load(dev(), fixture("phi3_tiny"));
  const auto expected = model::SafeTensors::open(fixture("phi3_tiny") / "expected.safetensors");
  const auto ids = test::tensor_values<int32_t>(expected, "long_ids");
  const auto want = test::tensor_values<float>(expected, "long_logits");
  const uint32_t T = uint32_t(ids.size()), V = m.config.vocab_size;
  ASSERT_TRUE(model::rope_uses_long_factors(m.config, T));
  infer::Generator g(dev(), m, nullptr, {.context = 128, .max_chunk = 16});
  const auto got = g.logits_of_every_position(ids);
  test::expect_close(got, want, 1e-4, "long logits", {T, V});
  report("long sequence logits", got, want);
  g.reset();
  g.prefill(ids);
  test::expect_close(std::vector<float>(g.logits().begin(), g.logits().end()),
                     std::vector<float>(want.end() - ptrdiff_t(V), want.end()), 1e-4, "chunked long prefill");
}

// PEFT's adapter (r 4 on every projection under PEFT's names, random A and B): the adapted logits, and the
// LoRA gradients of the prompt's loss (labels = ids, shifted as transformers shifts them).
TEST_P(ArchGolden, PeftAdapterLogitsAndGradientsMatchPeft) {
  const auto adapter = model::load_peft_adapter(dev(), model_->config, dir_ / "adapter");
  const auto st = model::SafeTensors::open(dir_ / "expected_adapter.safetensors");
  const auto want = test::tensor_values<float>(st, "logits");
  const uint32_t T = uint32_t(ids_.size()), V = model_->config.vocab_size;
  infer::Generator g(dev(), *model_, &adapter, {.context = 128});
  const auto got = g.logits_of_every_position(ids_);
  test::expect_close(got, want, 1e-4, "adapter logits", {T, V});
  report("adapter logits, every position", got, want);

  auto grads = model::zero_grads_like(dev(), adapter);
  std::vector<int32_t> targets(T), positions(T);
  for (uint32_t t = 0; t < T; ++t) {
    targets[t] = t + 1 < T ? ids_[t + 1] : -100;
    positions[t] = int32_t(t);
  }
  model::TrainBatch batch{.B = 1, .T = T, .ids = test::tensor_from_ints(dev(), {T}, ids_),
                          .positions = test::tensor_from_ints(dev(), {T}, positions),
                          .targets = test::tensor_from_ints(dev(), {T}, targets)};
  Tensor loss = Tensor::empty(dev(), {2}, DType::f32, "loss");
  vk::Recorder rec(dev());
  train::record_zero_grads(rec, grads);
  model::record_train_step(rec, *model_, adapter, grads, batch, loss);
  rec.finish().run();
  const double want_loss = test::tensor_values<float>(st, "loss")[0], got_loss = download(loss)[0];
  std::printf("  [measured] loss %.7f, PEFT %.7f\n", got_loss, want_loss);
  // On a device with tensor cores, training's attention rounds q, k, v and the probabilities to f16 where the
  // head dim is a multiple of 16 and the sequence has 16 tokens or more (qwen3_tiny, gemma3_tiny on the H100:
  // loss 3.3e-5 off, each gradient matrix within 2.2e-3 of its largest value, session 17): there the loss within
  // 1e-4 and each matrix within 5e-3 of its largest. The f32 path (lavapipe, CI) holds the tight bounds.
  const uint32_t D = model_->config.head_dim;
  const ops::AttentionDims dims{.T = T, .S = T, .H = model_->config.num_heads,
                                .KV = model_->config.num_kv_heads, .D = D};
  const bool f16_attention = ops::detail::attention_flash_coopmat_fit(dev(), dims, DType::f32) ||
                             ops::detail::attention_products_fit(dev(), dims, DType::f32);
  const double loss_tol = f16_attention ? 1e-4 : 1e-5, grad_tol = f16_attention ? 5e-3 : 1e-4;
  EXPECT_NEAR(got_loss, want_loss, loss_tol * std::fabs(want_loss));
  size_t checked = 0;
  std::vector<float> all_have, all_want;
  for (size_t i = 0; i < adapter.layers.size(); ++i)
    for (model::LoraTarget t : adapter.targets)
      for (bool b : {false, true}) {
        const std::string key = model::peft_key(i, t, b);
        const auto have = download(b ? grads.layers[i][size_t(t)].b : grads.layers[i][size_t(t)].a);
        const auto want_g = test::tensor_values<float>(st, "grad." + key);
        if (f16_attention) {  // each matrix within grad_tol of its largest gradient (elements near 0 included)
          const test::ErrorStats c = test::compare(have, want_g);
          double largest = 0;
          for (float w : want_g) largest = std::max(largest, double(std::fabs(w)));
          EXPECT_LE(c.max_abs, grad_tol * largest) << key;
        } else {
          test::expect_close(have, want_g, grad_tol, key);
        }
        all_have.insert(all_have.end(), have.begin(), have.end());
        all_want.insert(all_want.end(), want_g.begin(), want_g.end());
        ++checked;
      }
  report("LoRA gradients (all matrices)", all_have, all_want);
  EXPECT_EQ(checked, st.tensors().size() - 2);  // every gradient PEFT saved (all but logits and loss)
}

// export --merge of PEFT's adapter (model/merge.h): the merged folder, loaded as a plain model, gives PEFT's
// adapted logits.
TEST_P(ArchGolden, MergedAdapterGivesPeftLogits) {
  test::TempDir tmp;
  model::merge_adapter(dir_, dir_ / "adapter", tmp / "merged");
  const auto merged = model::Model::load(dev(), tmp / "merged");
  const auto want = test::tensor_values<float>(model::SafeTensors::open(dir_ / "expected_adapter.safetensors"), "logits");
  infer::Generator g(dev(), merged, nullptr, {.context = 128});
  const auto got = g.logits_of_every_position(ids_);
  test::expect_close(got, want, 1e-4, "merged model logits", {uint32_t(ids_.size()), merged.config.vocab_size});
  report("merged model logits vs PEFT's adapted", got, want);
}

// gemma3_tiny rewritten as a Gemma3ForConditionalGeneration folder (keys under `prefix`, config.json's text
// config nested, a vision tower tensor that must be ignored): the prefill logits are the plain folder's, bit
// for bit, and transformers'. PEFT's adapter with its keys where PEFT puts them for such a model
// (base_model.model.<prefix>layers...) gives the plain folder's adapted logits; saved again, its keys keep
// that prefix; merged into the folder (export --merge), the vision tensor is kept and the logits are PEFT's.
void expect_multimodal_layout_loads(vk::Device& dev, const std::string& prefix) {
  const fs::path src = fixture("gemma3_tiny");
  test::TempDir tmp;
  const fs::path dir = tmp / "model", adapter_dir = tmp / "adapter";
  test::write_gemma3_mm_folder(dir, prefix);
  fs::create_directories(adapter_dir);
  // The same tensors under new names: `from` replaced by `to` at the front of every key.
  auto renamed = [](const model::SafeTensors& st, const std::string& from, const std::string& to) {
    std::vector<model::TensorToWrite> out;
    for (const model::TensorInfo& t : st.tensors()) {
      EXPECT_TRUE(t.name.starts_with(from)) << t.name;
      out.push_back({.name = to + t.name.substr(from.size()), .dtype = t.dtype, .shape = t.shape, .bytes = t.bytes});
    }
    return out;
  };
  const auto peft = model::SafeTensors::open(src / "adapter/adapter_model.safetensors");
  model::write_safetensors(adapter_dir / "adapter_model.safetensors",
                           renamed(peft, "base_model.model.model.", "base_model.model." + prefix), {{"format", "pt"}});
  fs::copy_file(src / "adapter/adapter_config.json", adapter_dir / "adapter_config.json");

  const auto m = model::Model::load(dev, dir);
  EXPECT_TRUE(m.config.multimodal);
  EXPECT_EQ(m.config.weight_prefix, prefix);
  EXPECT_EQ(m.config.architecture_name, "Gemma3ForConditionalGeneration");
  const auto plain = model::Model::load(dev, src);
  const auto expected = model::SafeTensors::open(src / "expected.safetensors");
  const auto ids = test::tensor_values<int32_t>(expected, "ids");
  infer::Generator g(dev, m, nullptr, {.context = 128, .max_chunk = 16});
  infer::Generator g_plain(dev, plain, nullptr, {.context = 128, .max_chunk = 16});
  const auto got = g.logits_of_every_position(ids);
  EXPECT_EQ(got, g_plain.logits_of_every_position(ids)) << prefix;
  test::expect_close(got, test::tensor_values<float>(expected, "logits"), 1e-4, "multimodal layout logits");

  const auto adapter = model::load_peft_adapter(dev, m.config, adapter_dir);
  const auto plain_adapter = model::load_peft_adapter(dev, plain.config, src / "adapter");
  infer::Generator ga(dev, m, &adapter, {.context = 128});
  infer::Generator ga_plain(dev, plain, &plain_adapter, {.context = 128});
  EXPECT_EQ(ga.logits_of_every_position(ids), ga_plain.logits_of_every_position(ids)) << prefix << " adapted";
  model::save_peft_adapter(adapter, m.config, tmp / "saved", "");
  const auto saved = model::SafeTensors::open(tmp / "saved/adapter_model.safetensors");
  EXPECT_NE(saved.find("base_model.model." + prefix + "layers.0.self_attn.q_proj.lora_A.weight"), nullptr);
  model::merge_adapter(dir, tmp / "saved", tmp / "merged");
  const std::string vision = prefix.starts_with("model.") ? "model.vision_tower.patch.weight" : "vision_tower.patch.weight";
  EXPECT_NE(model::SafeTensors::open(tmp / "merged").find(vision), nullptr);
  const auto merged = model::Model::load(dev, tmp / "merged");
  infer::Generator gm(dev, merged, nullptr, {.context = 128});
  const auto want = test::tensor_values<float>(model::SafeTensors::open(src / "expected_adapter.safetensors"), "logits");
  test::expect_close(gm.logits_of_every_position(ids), want, 1e-4, "merged multimodal folder vs PEFT");
}

class Gemma3Golden : public test::GpuTest {};

TEST_F(Gemma3Golden, ConditionalGenerationFolderLoadsItsLanguageModel) {
  expect_multimodal_layout_loads(dev(), "model.language_model.");  // transformers 5
  expect_multimodal_layout_loads(dev(), "language_model.model.");  // older checkpoints
}

// The plain folder's adapter (model.layers.N) on a ConditionalGeneration folder (model.language_model.layers.N):
// loading it for generate and chat, merging it and writing its GGUF LoRA all refuse it with one message naming
// both layouts (they gave three different messages, session 13), and the refused GGUF leaves no file.
TEST_F(Gemma3Golden, AdapterOfTheOtherLayoutIsRefusedTheSameEverywhere) {
  test::TempDir tmp;
  const fs::path dir = tmp / "model", adapter = fixture("gemma3_tiny") / "adapter";
  test::write_gemma3_mm_folder(dir, "model.language_model.");
  const std::initializer_list<std::string_view> said = {
      "adapter_model.safetensors: its matrices adapt layers named model.layers.N",
      "names its layers model.language_model.layers.N", "trained on another layout of the model"};
  const auto m = model::Model::load(dev(), dir);
  EXPECT_TRUE(test::throws_error([&] { model::load_peft_adapter(dev(), m.config, adapter); }, said));
  EXPECT_TRUE(test::throws_error([&] { model::merge_adapter(dir, adapter, tmp / "merged"); }, said));
  EXPECT_TRUE(test::throws_error([&] { model::export_adapter_gguf(dir, adapter, tmp / "a.gguf"); }, said));
  EXPECT_FALSE(fs::exists(tmp / "a.gguf"));
  EXPECT_FALSE(fs::exists(tmp / "merged"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArchGolden, ::testing::Values("qwen3_tiny", "phi3_tiny", "gemma3_tiny"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ls
