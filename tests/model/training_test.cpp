// The LoRA training step (model/training.h) on the tiny golden Qwen2 model (f32), with an adapter on
// all seven projections (random A and B, so every gradient is non-trivial):
// - its loss equals the cross-entropy computed on the CPU from the inference path's logits (which
//   match transformers/PEFT, tests/infer/generator_golden_test) within 1e-5 relative;
// - its LoRA gradients match central finite differences of that loss, for sampled elements of every
//   A and B of every layer (one random element per matrix): |fd - g| <= 2e-3 * max|g of the matrix| + 5e-2 |g| (f32 loss, step 1e-2);
// - with LoRA dropout (p = 0.3, fixed seed) the first layer's gradients match finite differences the
//   same way, the same seed repeats the loss bit for bit and another seed changes it;
// - recomputing activations in the backward (StepOptions::recompute) changes no bit of loss or gradients;
// - run over only the rows that have a target (TrainBatch::loss_rows), loss and gradients are the same;
// - with the activations kept in f16 (LORASTUDIO_F16_ACTS=1), loss and gradients stay close to the f32 step's.
// The first two checks and the recompute check also run on a random-weight Qwen3 (q/k norms) and Phi-3
// (fused projections, longrope), the first two on a Mistral with a sliding window shorter than the step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "infer/generator.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/training.h"
#include "support/random_adapter.h"
#include "support/testing.h"
#include "support/tiny_model.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using model::LoraTarget;

struct Step {
  model::TrainBatch batch;
  Tensor loss;
  vk::Program program;
};

class TrainingStep : public test::GpuTest {
 protected:
  void SetUp() override {
    model_ = std::make_unique<model::Model>(model::Model::load(dev(), model_dir()));
    const auto& c = model_->config;
    adapter_ = test::random_adapter(dev(), c, 2, 100);
    grads_ = model::zero_grads_like(dev(), adapter_);
    ids_ = test::random_ints(kB * kT, 7, 0, int32_t(c.vocab_size) - 1);
    targets_.resize(ids_.size());
    for (uint32_t b = 0; b < kB; ++b)
      for (uint32_t t = 0; t < kT; ++t) {
        const size_t i = b * kT + t;
        targets_[i] = t + 1 < kT && (i % 4 != 1) ? ids_[i + 1] : -100;  // some positions ignored
      }
    std::vector<int32_t> positions(ids_.size());
    for (size_t i = 0; i < ids_.size(); ++i) positions[i] = int32_t(i % kT);
    step_.batch = {.B = kB, .T = kT, .ids = test::tensor_from_ints(dev(), {kB * kT}, ids_),
                   .positions = test::tensor_from_ints(dev(), {kB * kT}, positions),
                   .targets = test::tensor_from_ints(dev(), {kB * kT}, targets_)};
    step_.loss = Tensor::empty(dev(), {2}, DType::f32, "loss");
    if (dropout() > 0) step_.batch.dropout_seed = test::tensor_from_ints(dev(), {2}, std::vector<int32_t>{9, 4});
    vk::Recorder rec(dev());
    model::record_train_step(rec, *model_, adapter_, grads_, step_.batch, step_.loss, {.dropout = dropout()});
    step_.program = rec.finish();
  }
  double loss() {
    step_.program.run();
    return download(step_.loss)[0];
  }

  virtual float dropout() const { return 0.0f; }
  virtual fs::path model_dir() { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny"; }
  void expect_loss_matches_inference_logits();
  // Central differences of the loss for one random element of each A and B of the first `layers`
  // layers against the analytic gradients.
  void expect_gradients_match_finite_differences(size_t layers);
  void expect_recompute_identical();
  void expect_f16_activations_close();
  // The loss and every LoRA gradient (from zero) of one step recorded with these options.
  std::vector<std::vector<float>> loss_and_grads(const model::StepOptions& options);

  static constexpr uint32_t kB = 2, kT = 6;
  std::unique_ptr<model::Model> model_;
  model::LoraAdapter adapter_, grads_;
  std::vector<int32_t> ids_, targets_;
  Step step_;
};

// The vocabulary projection goes in chunks of rows: within the logits budget (128 MiB where one binding holds
// 256, else 64 MiB), a multiple of 16 rows (of 128 when the budget holds 128), as few
// chunks as the budget allows, sized about equally (no small remainder beside big chunks when the rows divide
// well). Where one binding holds 256 MiB and the rows' logits pass four budgets: two chunks, each within 1 GiB.
TEST(LogitChunks, WithinBudgetAlignedAndEven) {
  const uint32_t V = 151936;
  const uint64_t big = uint64_t(4) << 30, small = uint64_t(128) << 20;
  EXPECT_EQ(model::logit_rows_per_chunk(512, V, big), 128u);     // 220 f32 rows fit (128 in 128s): four of 128
  EXPECT_EQ(model::logit_rows_per_chunk(512, V, big, 2), 256u);  // 441 f16 rows fit (384): two of 256
  EXPECT_EQ(model::logit_rows_per_chunk(1024, V, big, 2), 384u); // 297 MiB, not over 4 x 128: 384, 384, 256
  EXPECT_EQ(model::logit_rows_per_chunk(4096, V, big, 2), 2048u);   // 1.16 GiB: two of 2,048 (594 MiB each)
  EXPECT_EQ(model::logit_rows_per_chunk(2000, V, big, 2), 1024u);   // half of 2,000 in 128s: 1,024 and 976
  EXPECT_EQ(model::logit_rows_per_chunk(8192, V, big, 2), 2816u);   // 1 GiB holds 3,533 (3,456): three of 2,816
  EXPECT_EQ(model::logit_rows_per_chunk(4096, V, small, 2), 128u);  // a small binding keeps 64 MiB: 220 (128)
  EXPECT_EQ(model::logit_rows_per_chunk(100, V, small), 64u);  // 96 fit in 64 MiB; 64 + 36
  EXPECT_EQ(model::logit_rows_per_chunk(7, 600, big), 7u);     // all rows at once
  for (uint64_t limit : {big, small})
    for (uint32_t bytes : {2u, 4u})
      for (uint32_t rows : {1u, 17u, 512u, 1000u, 3001u, 4096u, 20000u}) {
        const uint32_t c = model::logit_rows_per_chunk(rows, V, limit, bytes);
        const uint64_t base = limit >= (uint64_t(256) << 20) ? uint64_t(128) << 20 : uint64_t(64) << 20;
        const bool grown = limit == big && uint64_t(rows) * V * bytes > 4 * base;
        const uint64_t budget = grown ? uint64_t(1) << 30 : base;
        EXPECT_LE(uint64_t(c) * V * bytes, budget) << rows;
        const uint64_t fit = std::max<uint64_t>(c, base / (uint64_t(V) * bytes)), granule = fit >= 128 ? 128 : 16;
        EXPECT_TRUE(c == rows || c % granule == 0) << rows << " -> " << c;
        const uint64_t chunks = (rows + c - 1) / c;
        if (grown) {
          EXPECT_GE(chunks, 2u) << rows;
          EXPECT_LE(chunks, std::max<uint64_t>(2, (uint64_t(rows) * V * bytes + budget - 1) / budget + 1)) << rows;
        } else {
          const uint64_t most = std::max<uint64_t>(16, fit / granule * granule);  // rows the budget holds
          EXPECT_EQ(chunks, (rows + most - 1) / most) << rows << " rows in chunks of " << c;
        }
      }
}

TEST_F(TrainingStep, LossMatchesInferenceLogits) { expect_loss_matches_inference_logits(); }

void TrainingStep::expect_loss_matches_inference_logits() {
  const double got = loss();
  // CPU cross-entropy over the inference path's logits, row by row (each row of the batch on its own).
  const size_t V = model_->config.vocab_size;
  infer::Generator g(dev(), *model_, &adapter_, {.context = 16});
  double sum = 0;
  int count = 0;
  for (uint32_t b = 0; b < kB; ++b) {
    auto logits = g.logits_of_every_position(std::span(ids_).subspan(b * kT, kT));
    for (uint32_t t = 0; t < kT; ++t) {
      const int32_t target = targets_[b * kT + t];
      if (target < 0) continue;
      const float* row = logits.data() + t * V;
      double mx = *std::max_element(row, row + V), z = 0;
      for (size_t v = 0; v < V; ++v) z += std::exp(double(row[v]) - mx);
      sum += std::log(z) + mx - row[target];
      ++count;
    }
  }
  const double want = sum / count;
  std::printf("  [measured] loss %.7f, from inference logits %.7f (%d targets)\n", got, want, count);
  EXPECT_NEAR(got, want, 1e-5 * std::fabs(want));
  EXPECT_EQ(download(step_.loss)[1], float(count));
}

TEST_F(TrainingStep, LoraGradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(model_->config.num_layers);
}

// A Qwen3 model (q/k norms per head before RoPE, whose backward the LoRA gradients of q_proj and k_proj go
// through; head_dim 24 independent of hidden 80) with random weights (support/tiny_model.h): the same
// checks of loss and gradients.
class TrainingStepQwen3 : public TrainingStep {
 protected:
  fs::path model_dir() override {
    nlohmann::json c = nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "vocab_size": 301, "hidden_size": 80, "intermediate_size": 136,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
      "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true})");
    test::write_random_model(dir_.path(), c, 2000);
    return dir_.path();
  }
  test::TempDir dir_;
};

// Phi-3 (fused qkv_proj and gate_up_proj, whose LoRA pairs the layer applies part by part: A whole, B's
// rows) with longrope, its original context 4 shorter than the step's 6 tokens, so the long factors and
// the attention factor are in the loss.
class TrainingStepPhi3 : public TrainingStep {
 protected:
  fs::path model_dir() override {
    nlohmann::json c = nlohmann::json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "vocab_size": 301, "hidden_size": 72, "intermediate_size": 100,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rope_theta": 10000.0,
      "max_position_embeddings": 16, "original_max_position_embeddings": 4, "rms_norm_eps": 1e-5,
      "rope_scaling": {"type": "longrope", "short_factor": [1, 1.2, 1.4, 1.5, 1.7, 2, 2.2, 2.5, 3],
                       "long_factor": [2, 3, 5, 8, 11, 15, 20, 26, 33]}})");
    test::write_random_model(dir_.path(), c, 3000);
    return dir_.path();
  }
  test::TempDir dir_;
};

TEST_F(TrainingStepPhi3, LossMatchesInferenceLogits) {
  ASSERT_TRUE(model::rope_uses_long_factors(model_->config, kT));
  expect_loss_matches_inference_logits();
}
TEST_F(TrainingStepPhi3, LoraGradientsMatchFiniteDifferences) {
  EXPECT_EQ(adapter_.targets.size(), 4u);  // qkv_proj, o_proj, gate_up_proj, down_proj
  expect_gradients_match_finite_differences(model_->config.num_layers);
}
TEST_F(TrainingStepPhi3, RecomputedActivationsGiveIdenticalGradients) { expect_recompute_identical(); }

// A sliding window (3) shorter than the step's 6 tokens (Mistral): the row kernels' windowed forward and
// backward in the loss and its gradients.
class TrainingStepWindow : public TrainingStep {
 protected:
  fs::path model_dir() override {
    nlohmann::json c = nlohmann::json::parse(R"({
      "architectures": ["MistralForCausalLM"], "vocab_size": 301, "hidden_size": 64, "intermediate_size": 120,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 3,
      "rope_theta": 10000.0, "rms_norm_eps": 1e-5})");
    test::write_random_model(dir_.path(), c, 4000);
    return dir_.path();
  }
  test::TempDir dir_;
};

TEST_F(TrainingStepWindow, LossMatchesInferenceLogits) { expect_loss_matches_inference_logits(); }
TEST_F(TrainingStepWindow, LoraGradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(model_->config.num_layers);
}

TEST_F(TrainingStepQwen3, LossMatchesInferenceLogits) { expect_loss_matches_inference_logits(); }
TEST_F(TrainingStepQwen3, LoraGradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(model_->config.num_layers);
}
TEST_F(TrainingStepQwen3, RecomputedActivationsGiveIdenticalGradients) { expect_recompute_identical(); }

// With LoRA dropout (p = 0.3; the seed is fixed, so the loss is a deterministic function of A and B):
// the gradients still match finite differences. The first layer's matrices see the dropout of their
// own inputs and, through dx, the masks of every later layer.
class TrainingStepWithDropout : public TrainingStep {
 protected:
  float dropout() const override { return 0.3f; }
};

TEST_F(TrainingStepWithDropout, LoraGradientsMatchFiniteDifferences) { expect_gradients_match_finite_differences(1); }

// A loss with dropout differs from one without, and replaying with the same seed repeats it bit for bit.
TEST_F(TrainingStepWithDropout, SeedDrawsTheMasks) {
  const double first = loss(), again = loss();
  EXPECT_EQ(first, again);
  upload(step_.batch.dropout_seed, std::vector<int32_t>{9, 5});
  EXPECT_NE(loss(), first) << "a new seed draws new masks";
}

// Recomputing the activations in the backward (--grad-checkpoint) gives the same loss and gradients,
// bit for bit, with and without dropout (the recomputed forward draws the same masks).
std::vector<std::vector<float>> TrainingStep::loss_and_grads(const model::StepOptions& options) {
  auto grads = model::zero_grads_like(dev(), adapter_);
  Tensor l = Tensor::empty(dev(), {2}, DType::f32, "loss");
  vk::Recorder rec(dev());
  model::record_train_step(rec, *model_, adapter_, grads, step_.batch, l, options);
  rec.finish().run();
  std::vector<std::vector<float>> out{download(l)};
  for (const auto& layer : grads.layers)
    for (const auto& p : layer)
      if (p.defined()) out.push_back(download(p.a)), out.push_back(download(p.b));
  return out;
}

void TrainingStep::expect_recompute_identical() {
  const auto kept = loss_and_grads({.dropout = dropout()}),
             recomputed = loss_and_grads({.dropout = dropout(), .recompute = true});
  ASSERT_EQ(kept.size(), recomputed.size());
  EXPECT_GT(kept[0][0], 0.0f);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i], recomputed[i]) << "tensor " << i << " (0: the loss)";
}

TEST_F(TrainingStep, RecomputedActivationsGiveIdenticalGradients) { expect_recompute_identical(); }
TEST_F(TrainingStepWithDropout, RecomputedActivationsGiveIdenticalGradients) { expect_recompute_identical(); }
// With no adapter on down_proj the recomputed forward skips the down product (the backward reads nothing it
// makes): still the same bits.
TEST_F(TrainingStep, RecomputedWithoutDownAdapterGivesIdenticalGradients) {
  std::erase(adapter_.targets, LoraTarget::down_proj);
  for (auto& layer : adapter_.layers) layer[size_t(LoraTarget::down_proj)] = {};
  expect_recompute_identical();
}

// A layer's last residual add, x_out = x_mid + down, done three ways: by the next layer's input norm (the default,
// model::ResidualCarry; the last layer as below), by the down product adding into x_out, which the post-attention
// norm's pass set to x_mid (LORASTUDIO_ADD_INTO_NORM=0), or by an add pass after the product (and
// LORASTUDIO_DOWN_ADDS=0): the same f32 sum, x_mid + (x·W + the adapter's term), so the same loss and gradients, bit
// for bit.
TEST_F(TrainingStep, LastResidualAddDoneAnyWayChangesNoBit) {
  const auto carried = loss_and_grads({});
  setenv("LORASTUDIO_ADD_INTO_NORM", "0", 1);  // read while the step is recorded
  const auto adds = loss_and_grads({});
  setenv("LORASTUDIO_DOWN_ADDS", "0", 1);
  const auto pass = loss_and_grads({});
  unsetenv("LORASTUDIO_DOWN_ADDS");
  unsetenv("LORASTUDIO_ADD_INTO_NORM");
  ASSERT_EQ(adds.size(), pass.size());
  ASSERT_EQ(carried.size(), pass.size());
  EXPECT_GT(adds[0][0], 0.0f);
  for (size_t i = 0; i < adds.size(); ++i) {
    EXPECT_EQ(carried[i], pass[i]) << "tensor " << i << " (0: the loss), carried into the next norm";
    EXPECT_EQ(adds[i], pass[i]) << "tensor " << i << " (0: the loss), added by the product";
  }
}

// Split products' sums added up by the norms that read them (ops::SplitSums: o's in the post-attention norm's pass,
// down's in the next layer's input norm, gate's and up's dx in the post-attention norm's backward) against their own
// reduces (LORASTUDIO_SPLIT_INTO_NORM=0): the same bits, four dispatches a layer fewer (three in the last layer, whose
// down product adds into the stream). A model and step large enough for those products to split K on lavapipe (reductions of
// 256 and 512 over 32 rows) and an adapter on q and v only (an adapted product keeps its reduce).
class SplitIntoNormStep : public test::GpuTest {
 public:
  struct Result {
    std::vector<std::vector<float>> values;  // the loss, then each LoRA gradient
    size_t dispatches = 0;
  };
  uint32_t layers() const { return model_->config.num_layers; }
  // The dispatch counts below are lavapipe's (the shader cores' kernels); a GPU's kernels split other products (o's dx
  // into the flash backward's delta pass on cooperative-matrix-2) or take some epilogues at other sizes.
  bool counts_exact() { return dev().report().type == "cpu"; }
  Result run(bool into_norm) {
    if (!into_norm) setenv("LORASTUDIO_SPLIT_INTO_NORM", "0", 1);  // read while the step is recorded
    auto grads = model::zero_grads_like(dev(), adapter_);
    Tensor l = Tensor::empty(dev(), {2}, DType::f32, "loss");
    vk::Recorder rec(dev());
    model::record_train_step(rec, *model_, adapter_, grads, batch_, l, {});
    unsetenv("LORASTUDIO_SPLIT_INTO_NORM");
    vk::Program program = rec.finish();
    Result r{.dispatches = program.dispatch_count()};
    program.run();
    r.values.push_back(download(l));
    for (const auto& layer : grads.layers)
      for (const auto& p : layer)
        if (p.defined()) r.values.push_back(download(p.a)), r.values.push_back(download(p.b));
    return r;
  }

 protected:
  void SetUp() override {
    nlohmann::json c = nlohmann::json::parse(R"({
      "architectures": ["Qwen2ForCausalLM"], "vocab_size": 301, "hidden_size": 256, "intermediate_size": 512,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rope_theta": 10000.0,
      "rms_norm_eps": 1e-6, "tie_word_embeddings": true})");
    test::write_random_model(dir_.path(), c, 5000);
    model_ = std::make_unique<model::Model>(model::Model::load(dev(), dir_.path()));
    adapter_ = test::random_adapter(dev(), model_->config, 2, 700);
    std::erase_if(adapter_.targets, [](LoraTarget t) { return t != LoraTarget::q_proj && t != LoraTarget::v_proj; });
    for (auto& layer : adapter_.layers)
      for (size_t t = 0; t < layer.size(); ++t)
        if (LoraTarget(t) != LoraTarget::q_proj && LoraTarget(t) != LoraTarget::v_proj) layer[t] = {};
    const uint32_t B = 2, T = 16;
    const auto ids = test::random_ints(B * T, 11, 0, 300);
    std::vector<int32_t> positions(B * T), targets(B * T);
    for (uint32_t i = 0; i < B * T; ++i) {
      positions[i] = int32_t(i % T);
      targets[i] = i % T + 1 < T ? ids[i + 1] : -100;
    }
    batch_ = {.B = B, .T = T, .ids = test::tensor_from_ints(dev(), {B * T}, ids),
              .positions = test::tensor_from_ints(dev(), {B * T}, positions),
              .targets = test::tensor_from_ints(dev(), {B * T}, targets)};
  }
  test::TempDir dir_;
  std::unique_ptr<model::Model> model_;
  model::LoraAdapter adapter_;
  model::TrainBatch batch_;
};

// Prefill (the stream updated in place) the same way: o's and down's sums added into x by the norms' passes, and
// against LORASTUDIO_ADD_INTO_NORM=0 (the products adding into x), the same logits, bit for bit.
TEST_F(SplitIntoNormStep, PrefillAddsInTheNormsChangeNoBit) {
  const auto ids = test::random_ints(32, 13, 0, 300);
  auto logits = [&] {
    infer::Generator g(dev(), *model_, &adapter_, {.context = 64});
    return g.logits_of_every_position(ids);
  };
  const std::vector<float> in_norms = logits();
  setenv("LORASTUDIO_ADD_INTO_NORM", "0", 1);  // read while the prefill is recorded
  const std::vector<float> by_products = logits();
  unsetenv("LORASTUDIO_ADD_INTO_NORM");
  ASSERT_EQ(in_norms.size(), size_t(32) * model_->config.vocab_size);
  EXPECT_EQ(in_norms, by_products);
}

TEST_F(SplitIntoNormStep, SumsAddedUpByTheNormsChangeNoBit) {
  const Result fused = run(true), reduced = run(false);
  if (counts_exact())
    EXPECT_EQ(fused.dispatches + 4 * model_->config.num_layers - 1, reduced.dispatches)
        << "o's and down's reduces, gate's and up's dx reduces: none of their own";
  else
    EXPECT_GE(reduced.dispatches, fused.dispatches + 4 * model_->config.num_layers - 1);
  ASSERT_EQ(fused.values.size(), reduced.values.size());
  EXPECT_GT(fused.values[0][0], 0.0f);
  for (size_t i = 0; i < fused.values.size(); ++i)
    EXPECT_EQ(fused.values[i], reduced.values[i]) << "tensor " << i << " (0: the loss)";
}

// A switch's path against the default's (`env`=0 set while the step is recorded): the same loss and LoRA gradients,
// bit for bit, and `fewer` dispatches a layer fewer by default, with f32 activations and with f16 ones
// (LORASTUDIO_F16_ACTS=1).
void expect_switch_changes_no_bit(SplitIntoNormStep& t, const char* env, uint32_t fewer) {
  for (bool f16 : {false, true}) {
    const std::string what = std::string(env) + (f16 ? ", f16" : ", f32");
    if (f16) setenv("LORASTUDIO_F16_ACTS", "1", 1);
    const auto by_default = t.run(true);
    setenv(env, "0", 1);
    const auto switched = t.run(true);
    unsetenv(env);
    unsetenv("LORASTUDIO_F16_ACTS");
    if (t.counts_exact())
      EXPECT_EQ(by_default.dispatches + fewer * t.layers(), switched.dispatches) << what;
    else  // (where the device's kernel declines these shapes, both paths record the same dispatches)
      EXPECT_TRUE(switched.dispatches == by_default.dispatches ||
                  switched.dispatches == by_default.dispatches + fewer * t.layers())
          << what << ": " << by_default.dispatches << " dispatches by default, " << switched.dispatches << " switched";
    ASSERT_EQ(by_default.values.size(), switched.values.size()) << what;
    EXPECT_GT(by_default.values[0][0], 0.0f) << what;
    for (size_t i = 0; i < by_default.values.size(); ++i)
      EXPECT_EQ(by_default.values[i], switched.values[i]) << "tensor " << i << " (0: the loss), " << what;
  }
}

// The MLP activation's backward in down's dx product (ops::matmul_backward_x_glu: d gate and d up from the product's
// epilogue, d gated never written) against the product and the activation's own pass: one dispatch a layer fewer.
TEST_F(SplitIntoNormStep, ActivationBackwardInDownsProductChangesNoBit) {
  expect_switch_changes_no_bit(*this, "LORASTUDIO_GLU_EPILOGUE", 1);
}

// RoPE on q and k done by their split products' reduces (ops::RopeInReduce) against the reduce and a pass of its own:
// two dispatches a layer fewer (q's and k's products split here).
TEST_F(SplitIntoNormStep, RopeInTheReducesChangesNoBit) {
  expect_switch_changes_no_bit(*this, "LORASTUDIO_ROPE_IN_REDUCE", 2);
}

// Activations kept in f16 (model/layer_acts.h F16Operands, forced on any device by LORASTUDIO_F16_ACTS=1: the
// norms' outputs, q, k, v, the attention's output, gate, up and the MLP's gradients) give the f32 step's loss
// within 2e-3 relative and its LoRA gradients within 2e-2 of each matrix's largest: f16 rounds each to ~5e-4.
// Runs the f16 paths of the norms, RoPE, the adapter's skinny products, dropout and the attention backward.
void TrainingStep::expect_f16_activations_close() {
  const auto f32 = loss_and_grads({.dropout = dropout()});
  setenv("LORASTUDIO_F16_ACTS", "1", 1);  // read while the step is recorded
  const auto f16 = loss_and_grads({.dropout = dropout()});
  unsetenv("LORASTUDIO_F16_ACTS");
  ASSERT_EQ(f32.size(), f16.size());
  std::printf("  [measured] loss f32 %.7f, f16 activations %.7f\n", f32[0][0], f16[0][0]);
  EXPECT_NEAR(f16[0][0], f32[0][0], 2e-3 * std::fabs(f32[0][0]));
  double worst = 0;
  for (size_t i = 1; i < f32.size(); ++i) {
    double gmax = 0, err = 0;
    for (size_t e = 0; e < f32[i].size(); ++e) {
      gmax = std::max(gmax, double(std::fabs(f32[i][e])));
      err = std::max(err, double(std::fabs(f16[i][e] - f32[i][e])));
    }
    ASSERT_GT(gmax, 0.0) << "tensor " << i;
    worst = std::max(worst, err / gmax);
    EXPECT_LE(err, 2e-2 * gmax) << "gradient tensor " << i;
  }
  std::printf("  [measured] worst gradient error / max|g|: %.2e\n", worst);
}

TEST_F(TrainingStep, F16ActivationsStayCloseToF32) { expect_f16_activations_close(); }
TEST_F(TrainingStepWithDropout, F16ActivationsStayCloseToF32) { expect_f16_activations_close(); }
TEST_F(TrainingStepQwen3, F16ActivationsStayCloseToF32) { expect_f16_activations_close(); }

void TrainingStep::expect_gradients_match_finite_differences(size_t layers) {
  loss();  // grads accumulated once; read them all now (every later run adds to them)
  const auto& c = model_->config;
  std::vector<std::vector<float>> analytic;
  for (size_t i = 0; i < c.num_layers; ++i)
    for (size_t t = 0; t < model::kLoraTargetCount; ++t)
      if (grads_.layers[i][t].defined())
        for (bool is_b : {false, true})
          analytic.push_back(download(is_b ? grads_.layers[i][t].b : grads_.layers[i][t].a));
  size_t which = 0;
  std::mt19937 rng(5);
  double worst = 0;
  std::string worst_at;
  for (size_t i = 0; i < layers; ++i) {
    for (size_t t = 0; t < model::kLoraTargetCount; ++t) {
      if (!adapter_.layers[i][t].defined()) continue;  // a target this model does not have
      for (bool is_b : {false, true}) {
        const Tensor& p = is_b ? adapter_.layers[i][t].b : adapter_.layers[i][t].a;
        const auto& g = analytic[which++];
        double gmax = 0;
        for (float x : g) gmax = std::max(gmax, double(std::fabs(x)));
        ASSERT_GT(gmax, 0.0) << "no gradient for layer " << i << " " << model::target_name(LoraTarget(t));
        auto values = download(p);
        for (int sample = 0; sample < 1; ++sample) {  // one element per matrix keeps the test near 15 s on lavapipe
          const size_t e = rng() % values.size();
          const float h = 1e-2f, orig = values[e];
          values[e] = orig + h;
          upload(p, values);
          const double up = loss();
          values[e] = orig - h;
          upload(p, values);
          const double down = loss();
          values[e] = orig;
          upload(p, values);
          const double fd = (up - down) / (2.0 * h);
          const double err = std::fabs(fd - g[e]);
          if (err / gmax > worst)
            worst_at = "layer " + std::to_string(i) + " " + std::string(model::target_name(LoraTarget(t))) +
                       (is_b ? " B" : " A");
          worst = std::max(worst, err / gmax);
          EXPECT_LE(err, 2e-3 * gmax + 5e-2 * std::fabs(g[e]))
              << "layer " << i << " " << model::target_name(LoraTarget(t)) << (is_b ? " B" : " A") << "[" << e
              << "]: analytic " << g[e] << ", finite difference " << fd;
        }
      }
    }
  }
  std::printf("  [measured] worst |fd - analytic| / max|g| over the sampled elements: %.2e (%s)\n", worst,
              worst_at.c_str());
}

// The gradients scale with loss_scale (how micro-batches of an accumulated step are averaged); the
// loss itself does not.
TEST_F(TrainingStep, LossScaleScalesGradientsOnly) {
  const double plain = loss();
  std::vector<std::vector<float>> g1;
  for (const auto& t : {grads_.layers[0][0].a, grads_.layers[1][6].b}) g1.push_back(download(t));
  auto half = model::zero_grads_like(dev(), adapter_);
  Tensor loss2 = Tensor::empty(dev(), {2}, DType::f32, "loss");
  vk::Recorder rec(dev());
  model::record_train_step(rec, *model_, adapter_, half, step_.batch, loss2, {.loss_scale = 0.5f});
  rec.finish().run();
  EXPECT_EQ(download(loss2)[0], float(plain));
  size_t i = 0;
  for (const auto& t : {half.layers[0][0].a, half.layers[1][6].b}) {
    auto g = download(t);
    for (auto& x : g1[i]) x *= 0.5f;
    test::expect_close(g, g1[i++], 1e-6, "half-scaled gradient");
  }
}

// The loss over only the rows that have a target (TrainBatch::loss_rows, as the trainer records it when
// prompts are masked): the same loss and the same LoRA gradients as over all rows, with padding rows in
// loss_rows (K above the targets' count) changing nothing.
TEST_F(TrainingStep, LossOverRowsWithTargetsMatchesAllRows) {
  const double full = loss();
  std::vector<std::vector<float>> want;
  for (const auto& layer : grads_.layers)
    for (const auto& p : layer)
      if (p.defined()) want.push_back(download(p.a)), want.push_back(download(p.b));
  size_t counted = 0;
  for (int32_t t : targets_) counted += t >= 0;
  ASSERT_LT(counted + 2, targets_.size());
  const uint32_t K = uint32_t(counted + 2), M = kB * kT;
  std::vector<int32_t> rows(K), row_targets(K), slots(M);
  model::fill_loss_rows(targets_, rows, row_targets, slots);
  model::TrainBatch batch = step_.batch;
  batch.loss_rows = test::tensor_from_ints(dev(), {K}, rows);
  batch.loss_targets = test::tensor_from_ints(dev(), {K}, row_targets);
  batch.loss_slots = test::tensor_from_ints(dev(), {M}, slots);
  auto grads = model::zero_grads_like(dev(), adapter_);
  Tensor loss2 = Tensor::empty(dev(), {2}, DType::f32, "loss");
  vk::Recorder rec(dev());
  model::record_train_step(rec, *model_, adapter_, grads, batch, loss2);
  rec.finish().run();
  const auto got = download(loss2);
  EXPECT_NEAR(got[0], full, 1e-6 * std::fabs(full));
  EXPECT_EQ(got[1], float(counted));
  size_t i = 0;
  for (const auto& layer : grads.layers)
    for (const auto& p : layer) {
      if (!p.defined()) continue;  // a target the model does not have
      test::expect_close(download(p.a), want[i++], 1e-5, "LoRA A gradient");
      test::expect_close(download(p.b), want[i++], 1e-5, "LoRA B gradient");
    }
}

TEST(LossRows, RowsWithTargetsInOrderThenPaddingRowsWithout) {
  const std::vector<int32_t> targets = {-100, 7, 3, -100, 9, -100};
  std::vector<int32_t> rows(5), row_targets(5), slots(6);
  model::fill_loss_rows(targets, rows, row_targets, slots);
  EXPECT_EQ(rows, (std::vector<int32_t>{1, 2, 4, 0, 0}));
  EXPECT_EQ(row_targets, (std::vector<int32_t>{7, 3, 9, -100, -100}));
  EXPECT_EQ(slots, (std::vector<int32_t>{-1, 0, 1, -1, 2, -1}));
  std::vector<int32_t> two(2), two_targets(2);
  test::expect_error_naming([&] { model::fill_loss_rows(targets, two, two_targets, slots); }, "more rows with a target");
}

}  // namespace
}  // namespace ls
