// The memory plan (train/memory_plan.h, train/plan_fit.h):
// - on the tiny Qwen2 fixture, the plan of a real training run (3 steps on lavapipe through train(), LoRA on
//   q, v and down with dropout, batches of 4 packed rows, a validation program) against the allocator's
//   measured high-water mark of device-local bytes during the run, with and without --grad-checkpoint:
//   within 1% (the tensors' sizes come from the tables the code allocates from; the recorder's scratch from
//   the ops' rules);
// - the real Qwen2.5-7B config at B1 x T512, r8 on q, v: bf16 weights about 15.2 GB, nf4 weights well under
//   half of that; the parts add up to the total; --grad-checkpoint and nf4 make it smaller;
// - a budget too small: the error says what the run needs, what the device has, and the changes that save
//   most first, each with its saving (what the tensors take less when planned again with it); LORASTUDIO_DEVICE_MEMORY_BUDGET
//   makes train() fail that way before it loads the weights;
// - sizes as LORASTUDIO_DEVICE_MEMORY_BUDGET takes them; the KV cache's bytes as allocated;
// - the same run on random-weight Qwen3 (q/k norms: their inputs and statistics kept), Phi-3 (fused
//   qkv_proj and gate_up_proj, their parts' products), windowed Mistral and Gemma 3 (the sandwich norms' inputs
//   and statistics kept, norms as 1 + w in f32, the sliding layers' RoPE table, a window of 16 on two of its
//   three layers) models with qwen2_tiny's tokenizer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/forward.h"
#include "model/gemma3_mm_folder.h"
#include "model/model_files.h"
#include "model/safetensors.h"
#include "ops/quant_weight.h"
#include "support/testing.h"
#include "support/tiny_model.h"
#include "train/memory_plan.h"
#include "train/plan_fit.h"
#include "train/run_data.h"
#include "train/run_shape.h"
#include "train/trainer.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using model::LoraTarget;

constexpr double kMiB = 1 << 20;

std::string describe(const train::MemoryPlan& plan) {
  std::string s;
  for (const auto& i : plan.items)
    s += std::string("  ") + train::plan_part_name(i.part) + ": " + i.what + " = " + std::to_string(i.bytes) + "\n";
  return s;
}

class MemoryPlanRun : public test::GpuTest {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_memory_plan_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream data(dir_ / "data.jsonl");
    for (int i = 0; i < 40; ++i)
      data << R"({"text": "Example )" << i << R"(: the quick brown fox jumps over the lazy dog, then rests a while."})"
           << "\n";
    data.close();
    config_.model = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
    config_.data = dir_ / "data.jsonl";
    config_.store = dir_ / "runs.sqlite";
    config_.targets = {LoraTarget::q_proj, LoraTarget::v_proj, LoraTarget::down_proj};
    config_.rank = 4;
    config_.dropout = 0.1f;
    config_.batch_size = 4;
    config_.steps = 3;
    config_.data_options.max_seq_len = 128;
    config_.data_options.pack = true;
    config_.data_options.validation_fraction = 0.2;
    config_.val_every = 2;
  }
  void TearDown() override {
    fs::remove_all(dir_);
    test::GpuTest::TearDown();
  }
  // Trains c and returns {planned allocation, measured peak of device-local bytes during the run}.
  std::pair<uint64_t, uint64_t> plan_and_peak(train::TrainConfig c) {
    const train::RunShape shape = train::run_shape(c, train::load_run_data(c).data);
    const train::MemoryPlan plan = train::memory_plan(train::plan_options(dev(), c, shape));
    vk::Memory& memory = dev().memory();
    const uint64_t before = memory.stats().device_bytes;
    memory.reset_peak();
    uint64_t started_with = 0;
    train::train(dev(), c, [](const train::StepReport&) { return true; }, nullptr, {},
                 [&](const train::RunStart& s) { started_with = s.planned_bytes; });
    const uint64_t peak = memory.stats().peak_device_bytes - before;
    EXPECT_EQ(started_with, plan.total()) << "the trainer's plan is this plan";
    std::printf("%s: planned %llu bytes (%.3f MiB), measured peak %llu bytes (B%u x T%u, K %u, validation K %u)\n%s",
                c.grad_checkpoint ? "--grad-checkpoint" : "stored activations",
                static_cast<unsigned long long>(plan.allocated()), double(plan.allocated()) / kMiB,
                static_cast<unsigned long long>(peak), shape.batch, shape.seq_len, shape.loss_rows,
                shape.validation_loss_rows, describe(plan).c_str());
    return {plan.allocated(), peak};
  }
  fs::path dir_;
  train::TrainConfig config_;
};

// Tolerance: 1% of the measured peak (on lavapipe the two are equal to the byte).
TEST_F(MemoryPlanRun, PlanMatchesMeasuredPeak) {
  for (bool checkpoint : {false, true}) {
    auto c = config_;
    c.grad_checkpoint = checkpoint;
    c.out = dir_ / (checkpoint ? "recompute" : "stored");
    const auto [planned, peak] = plan_and_peak(c);
    EXPECT_NEAR(double(planned), double(peak), 0.01 * double(peak)) << (checkpoint ? "with" : "without")
                                                                     << " --grad-checkpoint";
  }
}

// Every projection adapted at rank 32 (the adapter's products leave the skinny kernel), rows not packed (the
// loss runs over the rows with a target only), no dropout, no validation.
TEST_F(MemoryPlanRun, PlanMatchesMeasuredPeakEveryTarget) {
  for (bool checkpoint : {false, true}) {
    auto c = config_;
    c.targets = {LoraTarget::q_proj,    LoraTarget::k_proj,  LoraTarget::v_proj,   LoraTarget::o_proj,
                 LoraTarget::gate_proj, LoraTarget::up_proj, LoraTarget::down_proj};
    c.rank = 32;
    c.dropout = 0;
    c.batch_size = 2;
    c.data_options.pack = false;
    c.data_options.validation_fraction = 0;
    c.grad_checkpoint = checkpoint;
    c.out = dir_ / (checkpoint ? "all-recompute" : "all-stored");
    const auto [planned, peak] = plan_and_peak(c);
    EXPECT_NEAR(double(planned), double(peak), 0.01 * double(peak)) << (checkpoint ? "with" : "without")
                                                                     << " --grad-checkpoint";
  }
}

// Qwen3 (LoRA on q, v, down), Phi-3 (on qkv_proj, gate_up_proj, down), a Mistral whose sliding window (16)
// is shorter than the rows (the row-by-row attention backward) and a Gemma 3 (its sandwich norms), with and
// without --grad-checkpoint.
TEST_F(MemoryPlanRun, PlanMatchesMeasuredPeakQwen3AndPhi3) {
  const fs::path qwen2 = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
  const nlohmann::json qwen3 = nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "vocab_size": 618, "hidden_size": 80, "intermediate_size": 136,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
      "max_position_embeddings": 256, "rope_theta": 1000000.0, "tie_word_embeddings": true, "eos_token_id": 617})");
  nlohmann::json phi3 = nlohmann::json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "vocab_size": 618, "hidden_size": 72, "intermediate_size": 100,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
      "original_max_position_embeddings": 64, "eos_token_id": 617, "bos_token_id": null,
      "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, 1, 1],
                       "long_factor": [2, 2, 2, 2, 2, 2, 2, 2, 2]}})");
  nlohmann::json mistral = nlohmann::json::parse(R"({
      "architectures": ["MistralForCausalLM"], "vocab_size": 618, "hidden_size": 64, "intermediate_size": 120,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 16,
      "eos_token_id": 617, "bos_token_id": null})");
  nlohmann::json gemma3 = nlohmann::json::parse(R"({
      "architectures": ["Gemma3ForCausalLM"], "vocab_size": 618, "hidden_size": 64, "intermediate_size": 88,
      "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "query_pre_attn_scalar": 20, "sliding_window": 16, "sliding_window_pattern": 2, "final_logit_softcapping": 8.0,
      "rope_scaling": {"rope_type": "linear", "factor": 2.0}, "eos_token_id": 617, "bos_token_id": null,
      "max_position_embeddings": 256})");
  const std::pair<const char*, nlohmann::json> models[] = {
      {"qwen3", qwen3}, {"phi3", phi3}, {"mistral", mistral}, {"gemma3", gemma3}};
  for (const auto& [name, json] : models) {
    const fs::path model = dir_ / name;
    test::write_random_model(model, json, 5000);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
      fs::copy_file(qwen2 / f, model / f);
    for (bool checkpoint : {false, true}) {
      auto c = config_;
      c.model = model;
      if (std::string(name) == "phi3") c.targets = {LoraTarget::qkv_proj, LoraTarget::gate_up_proj, LoraTarget::down_proj};
      c.grad_checkpoint = checkpoint;
      c.out = dir_ / (std::string(name) + (checkpoint ? "-recompute" : "-stored"));
      const auto [planned, peak] = plan_and_peak(c);
      EXPECT_NEAR(double(planned), double(peak), 0.01 * double(peak)) << name << (checkpoint ? " with" : " without")
                                                                       << " --grad-checkpoint";
    }
  }
}

// A Gemma3ForConditionalGeneration folder (its language model under language_model.model., as older checkpoints
// name it, and a vision tower tensor): the plan looks the weights up under the folder's own names, and the run
// trains (it stopped at the plan with "no tensor model.layers.0.self_attn.q_proj.weight", session 13).
TEST_F(MemoryPlanRun, PlanMatchesMeasuredPeakGemma3ConditionalGeneration) {
  const fs::path model = dir_ / "gemma3_mm";
  test::write_gemma3_mm_folder(model, "language_model.model.");
  auto c = config_;
  c.model = model;
  c.out = dir_ / "gemma3-mm";
  const auto [planned, peak] = plan_and_peak(c);
  EXPECT_NEAR(double(planned), double(peak), 0.01 * double(peak));
  EXPECT_TRUE(fs::exists(c.out / "adapter" / "adapter_model.safetensors"));
}

// A quantized base (QLoRA): the packed weights, the quantized layers' biases in the products' dtype, and the
// scratch the weights are dequantized into for each product, with and without --grad-checkpoint.
TEST_F(MemoryPlanRun, PlanMatchesMeasuredPeakQuantized) {
  for (QuantType q : {QuantType::nf4, QuantType::q8})
    for (bool checkpoint : {false, true}) {
      auto c = config_;
      c.quantize = q;
      c.grad_checkpoint = checkpoint;
      c.out = dir_ / (std::string(quant_name(q)) + (checkpoint ? "-recompute" : "-stored"));
      const auto [planned, peak] = plan_and_peak(c);
      EXPECT_NEAR(double(planned), double(peak), 0.01 * double(peak))
          << quant_name(q) << (checkpoint ? " with" : " without") << " --grad-checkpoint";
    }
}

// The device's budget as LORASTUDIO_DEVICE_MEMORY_BUDGET sets it: train() stops before it loads the weights,
// saying what the run needs and what to change.
TEST_F(MemoryPlanRun, TooSmallBudgetStopsBeforeTheWeights) {
  // 64 KiB beyond the blocks this process already holds (earlier tests' warm blocks count as in use).
  const uint64_t before = dev().memory().stats().device_bytes;
  const uint64_t held = dev().memory().stats().device_block_bytes;
  ::setenv("LORASTUDIO_DEVICE_MEMORY_BUDGET", std::to_string(held + 65536).c_str(), 1);
  auto c = config_;
  c.out = dir_ / "small";
  try {
    train::train(dev(), c, [](const train::StepReport&) { return true; });
    ADD_FAILURE() << "trained with a 64 KiB budget";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not enough GPU memory"), std::string::npos) << what;
    EXPECT_NE(what.find("64.0 KiB available"), std::string::npos) << what;
    EXPECT_NE(what.find("LORASTUDIO_DEVICE_MEMORY_BUDGET"), std::string::npos) << what;
    EXPECT_NE(what.find("--batch-size 1"), std::string::npos) << what;
  }
  ::unsetenv("LORASTUDIO_DEVICE_MEMORY_BUDGET");
  EXPECT_EQ(dev().memory().stats().device_bytes, before) << "nothing was allocated";
}

// Qwen2.5-7B's config.json (the sizes; the rest as the model card's).
model::ModelConfig qwen7b() {
  const nlohmann::json j = {
      {"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", 3584}, {"intermediate_size", 18944},
      {"num_hidden_layers", 28}, {"num_attention_heads", 28}, {"num_key_value_heads", 4}, {"vocab_size", 152064},
      {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
      {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"model_type", "qwen2"}, {"hidden_act", "silu"}};
  return model::parse_config(j, "Qwen2.5-7B/config.json");
}

// An H100 as the plan sees it: tensor cores (both kinds), subgroups of 32, 4 GiB bindings.
train::PlanOptions qwen7b_options() {
  return {.model = qwen7b(),
          .weight_dtype = [](const model::ExpectedTensor&) { return DType::bf16; },
          .device = {.coopmat = true, .coopmat2 = true, .subgroup_size = 32, .max_binding = uint64_t(1) << 32},
          .shape = {.batch = 1, .seq_len = 512},
          .targets = {LoraTarget::q_proj, LoraTarget::v_proj},
          .rank = 8};
}

TEST(MemoryPlan, Qwen7bNoneAndNf4) {
  auto o = qwen7b_options();
  const train::MemoryPlan plan = train::memory_plan(o);
  o.quantize = QuantType::nf4;
  const train::MemoryPlan nf4 = train::memory_plan(o);
  for (const auto* p : {&plan, &nf4}) {
    uint64_t parts = 0;
    for (size_t i = 0; i < train::kPlanParts; ++i) parts += p->bytes(train::PlanPart(i));
    EXPECT_EQ(parts, p->total()) << "the parts add up to the total";
    EXPECT_EQ(p->total() % vk::Memory::kBlockSize, 0u) << "rounded up to the allocator's blocks";
    std::printf("%s\n", describe(*p).c_str());
  }
  const double weights = double(plan.bytes(train::PlanPart::weights)), weights4 = double(nf4.bytes(train::PlanPart::weights));
  std::printf("Qwen2.5-7B, B1 x T512, r8 q,v: weights %.2f GB (none) / %.2f GB (nf4); total %.2f GiB / %.2f GiB\n",
              weights / 1e9, weights4 / 1e9, double(plan.total()) / (kMiB * 1024), double(nf4.total()) / (kMiB * 1024));
  EXPECT_NEAR(weights / 1e9, 15.23, 0.05);  // 7.62 billion bf16 parameters
  EXPECT_LT(weights4, 0.4 * weights);       // the projections in 0.52 bytes a weight; embedding and lm_head bf16
  EXPECT_LT(nf4.total(), plan.total());
  if (ops::quant_in_gemm(true, 3584))  // the products read the packed weight: no dequantized copy
    EXPECT_EQ(nf4.bytes(train::PlanPart::scratch), plan.bytes(train::PlanPart::scratch));
  else
    EXPECT_GT(nf4.bytes(train::PlanPart::scratch), plan.bytes(train::PlanPart::scratch)) << "the dequantized weight";
  EXPECT_EQ(plan.bytes(train::PlanPart::lora), nf4.bytes(train::PlanPart::lora));
  EXPECT_GT(plan.bytes(train::PlanPart::activations), 0u);
  EXPECT_EQ(plan.bytes(train::PlanPart::validation), 0u);
  EXPECT_EQ(plan.bytes(train::PlanPart::kv_cache), 0u);
  // LoRA: 28 layers x (A [8, 3584] + B [3584, 8] for q, A [8, 3584] + B [512, 8] for v), 4 copies, f32.
  EXPECT_NEAR(double(plan.bytes(train::PlanPart::lora)), 4.0 * 28 * (2 * 8 * 3584 + 8 * 3584 + 8 * 512) * 4, 28 * 4 * 4 * 256);
  auto ckpt = qwen7b_options();
  ckpt.grad_checkpoint = true;
  EXPECT_LT(train::memory_plan(ckpt).bytes(train::PlanPart::activations), plan.bytes(train::PlanPart::activations));
}

// A discrete GPU (system memory a heap apart): the untied 7B embedding table is planned in system memory, not the
// GPU's (model::embedding_in_host_memory), by the same bytes the device plan drops; a tied table (it is the lm_head
// too) stays on the GPU.
TEST(MemoryPlan, UntiedEmbeddingTableInSystemMemoryOnADiscreteGpu) {
  auto o = qwen7b_options();
  const train::MemoryPlan unified = train::memory_plan(o);
  o.device.host_apart = true;
  const train::MemoryPlan discrete = train::memory_plan(o);
  ASSERT_FALSE(o.model.tie_word_embeddings);
  const uint64_t table = uint64_t(o.model.vocab_size) * o.model.hidden_size * 2;  // bf16
  EXPECT_EQ(unified.host_bytes, 0u);
  EXPECT_GE(discrete.host_bytes, table);
  EXPECT_LT(discrete.host_bytes, table + (uint64_t(2) << 20)) << "the table, rounded as the allocator rounds it";
  EXPECT_NE(discrete.host_what.find("embedding"), std::string::npos) << discrete.host_what;
  EXPECT_EQ(unified.bytes(train::PlanPart::weights) - discrete.bytes(train::PlanPart::weights), discrete.host_bytes);
  EXPECT_LT(discrete.total(), unified.total());
  o.model.tie_word_embeddings = true;
  EXPECT_EQ(train::memory_plan(o).host_bytes, 0u) << "a tied table is the lm_head: it stays on the GPU";
}

// Issue 23's 14B shape (hidden 5120, 48 layers, 40/8 heads, MLP 13824, vocab 152064, untied; 14.8B
// parameters) at B1 x T512 r8 q,v on an H100: nf4 with --grad-checkpoint fits a 16 GB GPU (the target: <= 14
// GiB); the figures for the four combinations are printed.
TEST(MemoryPlan, Qwen14bShapeFitsSixteenGigabytesWithNf4) {
  auto o = qwen7b_options();
  nlohmann::json j = {
      {"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", 5120}, {"intermediate_size", 13824},
      {"num_hidden_layers", 48}, {"num_attention_heads", 40}, {"num_key_value_heads", 8}, {"vocab_size", 152064},
      {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
      {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"model_type", "qwen2"}, {"hidden_act", "silu"}};
  o.model = model::parse_config(j, "14b/config.json");
  const double gib = double(uint64_t(1) << 30);
  double totals[2][2] = {};
  for (QuantType q : {QuantType::none, QuantType::nf4})
    for (bool checkpoint : {false, true}) {
      o.quantize = q;
      o.grad_checkpoint = checkpoint;
      const train::MemoryPlan p = train::memory_plan(o);
      totals[q == QuantType::nf4][checkpoint] = double(p.total()) / gib;
      std::printf("14B shape, B1 x T512, r8 q,v, %s%s: weights %.2f GB, total %.2f GiB\n", quant_name(q),
                  checkpoint ? ", --grad-checkpoint" : "", double(p.bytes(train::PlanPart::weights)) / 1e9,
                  double(p.total()) / gib);
    }
  EXPECT_LE(totals[1][1], 14.0);
  EXPECT_GT(totals[0][0], 24.0) << "bf16 without recomputation does not fit a 24 GB GPU";
}

// A 16 GiB device for the 7B run at B4 x T2048: the error's figures and its changes, most saving first.
TEST(MemoryPlan, TooSmallSaysWhatToChange) {
  auto o = qwen7b_options();
  o.shape.batch = 4;
  o.shape.seq_len = 2048;
  const train::MemoryPlan plan = train::memory_plan(o);
  const vk::MemoryBudget budget{.heap_bytes = uint64_t(16) << 30, .budget_bytes = uint64_t(16) << 30, .in_use_bytes = 0,
                                .source = "test"};
  const auto changes = train::ways_to_fit(o, budget.available());
  ASSERT_GE(changes.size(), 4u);
  for (size_t i = 1; i < changes.size(); ++i) EXPECT_GE(changes[i - 1].saves, changes[i].saves) << "most saving first";
  auto find = [&](const std::string& flags) {
    for (const auto& c : changes)
      if (c.flags.rfind(flags, 0) == 0) return c;
    ADD_FAILURE() << "no change " << flags;
    return train::PlanChange{};
  };
  auto nf4 = o;
  nf4.quantize = QuantType::nf4;
  EXPECT_EQ(find("--quantize nf4").saves, plan.allocated() - train::memory_plan(nf4).allocated());
  auto ckpt = o;
  ckpt.grad_checkpoint = true;
  EXPECT_EQ(find("--grad-checkpoint").saves, plan.allocated() - train::memory_plan(ckpt).allocated());
  EXPECT_GT(find("--batch-size").saves, 0u);
  EXPECT_GT(find("--seq-len").saves, 0u);
  EXPECT_GT(find("--rank 4").saves, 0u);
  try {
    train::require_fit(o, plan, budget, "Test GPU");
    ADD_FAILURE() << "a " << train::format_bytes(plan.total()) << " plan fit 16 GiB";
  } catch (const Error& e) {
    const std::string what = e.what();
    std::printf("%s\n", what.c_str());
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
    EXPECT_NE(what.find("needs " + train::format_bytes(plan.total())), std::string::npos) << what;
    EXPECT_NE(what.find("Test GPU has 16.00 GiB available"), std::string::npos) << what;
    size_t at = 0;
    for (const auto& c : changes) {  // each change with its saving, in the order of the list
      const size_t found = what.find(c.flags + " saves " + train::format_bytes(c.saves), at);
      EXPECT_NE(found, std::string::npos) << c.flags << " in: " << what;
      at = found == std::string::npos ? at : found;
    }
  }
  EXPECT_NO_THROW(train::require_fit(o, plan, {.budget_bytes = plan.total(), .source = "test"}, "Test GPU"));
  const std::string table = train::format_plan(o, plan, budget, "Test GPU");
  EXPECT_NE(table.find("Does not fit"), std::string::npos) << table;
  EXPECT_NE(table.find("base weights"), std::string::npos) << table;
}

TEST(MemoryPlan, ByteSizes) {
  EXPECT_EQ(vk::parse_byte_size("1073741824"), uint64_t(1) << 30);
  EXPECT_EQ(vk::parse_byte_size("6G"), uint64_t(6) << 30);
  EXPECT_EQ(vk::parse_byte_size("512MiB"), uint64_t(512) << 20);
  EXPECT_EQ(vk::parse_byte_size(" 1.5 GB "), uint64_t(3) << 29);
  EXPECT_EQ(vk::parse_byte_size("64k"), uint64_t(64) << 10);
  EXPECT_FALSE(vk::parse_byte_size("lots"));
  EXPECT_FALSE(vk::parse_byte_size("6X"));
  EXPECT_FALSE(vk::parse_byte_size(""));
}

class MemoryPlanDevice : public test::GpuTest {};

// The KV cache's planned bytes are what KvCache::allocate takes.
TEST_F(MemoryPlanDevice, KvCacheBytesAsAllocated) {
  const model::ModelConfig c = model::load_config(fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny");
  const uint64_t before = dev().memory().stats().device_bytes;
  const model::KvCache cache = model::KvCache::allocate(dev(), c, 100, DType::f32);
  EXPECT_EQ(dev().memory().stats().device_bytes - before, model::KvCache::bytes(c, 100, DType::f32));
}

// The device's memory: the heap, and a budget no larger (lavapipe has no VK_EXT_memory_budget: the heap).
TEST_F(MemoryPlanDevice, BudgetOfTheDevice) {
  const vk::MemoryBudget b = dev().memory_budget();
  EXPECT_GT(b.heap_bytes, 0u);
  EXPECT_LE(b.budget_bytes, b.heap_bytes);
  EXPECT_LE(b.available(), b.budget_bytes);
  EXPECT_FALSE(b.source.empty());
  std::printf("%s: heap %s, budget %s (%s), in use %s\n", dev().report().name.c_str(),
              train::format_bytes(b.heap_bytes).c_str(), train::format_bytes(b.budget_bytes).c_str(), b.source.c_str(),
              train::format_bytes(b.in_use_bytes).c_str());
}

}  // namespace
}  // namespace ls
