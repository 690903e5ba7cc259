// One LoRA training run against PyTorch + PEFT (tests/fixtures/make_train_fixtures.py, f32 on the CPU):
// the tiny Qwen2 with the adapter PEFT saved (r 4 on q_proj, v_proj, down_proj, random B), one fixed
// batch, AdamW (lr 1e-3, wd 0.01) with clip_grad_norm_(1.0), 20 steps.
// Tolerances: step-1 loss and every LoRA gradient within 1e-4 relative (gradients: |a - e| <= 1e-4
// (|e| + mean|e|), test::expect_close); the loss of each of the 20 steps within 1e-3 relative.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "model/training.h"
#include "ops/optimizer.h"
#include "support/tensor_values.h"
#include "support/testing.h"
#include "train/optimizer_update.h"
#include "train/schedule.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

// flat: the adapter's matrices in one allocation as the trainer holds them (model::flat_like), so the zeroing
// and the update each take one dispatch over the whole; else a tensor each, as loaded.
class TrainGolden : public test::GpuTest, public ::testing::WithParamInterface<bool> {};

TEST_P(TrainGolden, LossGradientsAndTwentyStepsMatchPeft) {
  const fs::path dir = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
  const auto m = model::Model::load(dev(), dir);
  auto adapter = model::load_peft_adapter(dev(), m.config, dir / "train_adapter");
  if (GetParam()) {
    adapter = model::flat_like(dev(), adapter, true);
    ASSERT_TRUE(adapter.storage.defined());
  }
  auto grads = model::zero_grads_like(dev(), adapter), m1 = model::zero_grads_like(dev(), adapter),
       m2 = model::zero_grads_like(dev(), adapter);
  const auto expected = model::SafeTensors::open(dir / "expected_train.safetensors");
  const auto ids = test::tensor_values<int32_t>(expected, "ids"), labels = test::tensor_values<int32_t>(expected, "labels");
  const auto losses = test::tensor_values<float>(expected, "losses");
  const uint32_t B = 2, T = 8, M = B * T;
  // HF shifts the labels inside the model: position t predicts labels[t + 1].
  std::vector<int32_t> targets(M), positions(M);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t t = 0; t < T; ++t) {
      targets[b * T + t] = t + 1 < T ? labels[b * T + t + 1] : -100;
      positions[b * T + t] = int32_t(t);
    }
  model::TrainBatch batch{.B = B, .T = T, .ids = test::tensor_from_ints(dev(), {M}, ids),
                          .positions = test::tensor_from_ints(dev(), {M}, positions),
                          .targets = test::tensor_from_ints(dev(), {M}, targets)};
  Tensor loss = Tensor::empty(dev(), {2}, DType::f32, "loss");
  Tensor hyper = Tensor::empty(dev(), {ops::kHyperSlots}, DType::f32, "hyper");
  Tensor sumsq = Tensor::empty(dev(), {1}, DType::f32, "sumsq"), norm = Tensor::empty(dev(), {1}, DType::f32, "norm");
  vk::Recorder fb(dev());
  train::record_zero_grads(fb, grads);
  model::record_train_step(fb, m, adapter, grads, batch, loss);
  auto forward_backward = fb.finish();
  vk::Recorder up(dev());
  train::record_optimizer_update(up, adapter, grads, m1, m2, hyper, sumsq, norm, 1.0f);
  auto update = up.finish();

  const train::OptimizerHyper h{.weight_decay = 0.01f, .max_grad_norm = 1.0f};
  double worst_loss = 0, first_got = 0, last_got = 0;
  for (uint32_t step = 1; step <= 20; ++step) {
    forward_backward.run();
    const double got = download(loss)[0];
    if (step == 1) first_got = got;
    last_got = got;
    if (step == 1) {
      EXPECT_NEAR(got, losses[0], 1e-4 * losses[0]) << "step 1 loss";
      for (size_t i = 0; i < adapter.layers.size(); ++i)
        for (size_t t = 0; t < model::kLoraTargetCount; ++t)
          if (adapter.layers[i][t].defined())
            for (bool b : {false, true}) {
              const std::string key = model::peft_key(i, model::LoraTarget(t), b);
              const auto want = test::tensor_values<float>(expected, "grad." + key);
              const auto have = download(b ? grads.layers[i][t].b : grads.layers[i][t].a);
              test::expect_close(have, want, 1e-4, "gradient " + key);
              auto s = test::compare(have, want);
              std::printf("  [measured] %-64s max abs err %.2e (max rel %.2e)\n", key.c_str(), s.max_abs, s.max_rel);
            }
    }
    worst_loss = std::max(worst_loss, std::fabs(got - losses[step - 1]) / losses[step - 1]);
    EXPECT_NEAR(got, losses[step - 1], 1e-3 * losses[step - 1]) << "step " << step;
    const auto hv = train::hyper_values(h, 1e-3f, step);
    upload(hyper, std::span<const float>(hv));
    update.run();
  }
  std::printf("  [measured] 20 steps: worst relative loss difference %.2e (first %.6f vs %.6f, last %.6f vs %.6f)\n",
              worst_loss, first_got, losses[0], last_got, losses[19]);
}

INSTANTIATE_TEST_SUITE_P(Adapter, TrainGolden, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "flat" : "a_tensor_each"; });

}  // namespace
}  // namespace ls
