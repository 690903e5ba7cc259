#pragma once
// Learning-rate schedules as transformers defines them (src/transformers/optimization.py), and the values
// of the optimizer's per-step device buffer (ops/optimizer.h: hyper).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ls::train {

// lr_at(o, step) = lr * factor(step), step counted from 0 like the LambdaLR's last_epoch: the first
// optimizer step uses step 0 (so with warmup the very first update has lr 0, as in the HF Trainer).
// The factor, computed in double (W = warmup_steps, N = total_steps, s = step; Python's arithmetic):
//   s < W (every kind):  s / max(1, W)
//   Constant:            1                                   get_constant_schedule_with_warmup
//   Linear:              max(0, (N - s) / max(1, N - W))     get_linear_schedule_with_warmup
//   Cosine:              max(0, c * (1 - r) + r) with c = 0.5 * (1 + cos(pi * 0.5 * 2 * (s - W) / max(1, N - W))),
//                        r = min_lr_ratio                    get_cosine_with_min_lr_schedule_with_warmup
//                        (min_lr_rate = r; r = 0 is get_cosine_schedule_with_warmup, num_cycles 0.5)
// min_lr_ratio also lifts Linear's floor the same way, max(0, f * (1 - r) + r) (transformers has no
// linear-with-min-lr; r = 0 is exactly its linear schedule). Past N the formulas run on as transformers'
// do: Linear stays at 0 (or r), Cosine climbs back along the cosine. lr is taken as the shortest decimal
// that reads back as the float (2e-4f -> 2e-4), as the Python float it stands for, and the product is
// rounded to float once.
struct ScheduleOptions {
  enum Kind { Constant, Linear, Cosine } kind = Linear;
  float lr = 2e-4f;
  uint32_t warmup_steps = 0;
  uint32_t total_steps = 0;
  float min_lr_ratio = 0;
};

// Throws ls::Error on a negative or non-finite lr or a min_lr_ratio outside [0, 1].
float lr_at(const ScheduleOptions& o, uint32_t step);

// "constant", "linear", "cosine" (transformers' SchedulerType names; "constant_with_warmup" is accepted
// for Constant, whose warmup is warmup_steps either way).
std::optional<ScheduleOptions::Kind> parse_schedule_kind(std::string_view name);
const char* schedule_kind_name(ScheduleOptions::Kind kind);

struct OptimizerHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  float max_grad_norm = 1.0f;  // clip_grad_norm_'s max_norm; 0 turns clipping off
};

// The hyper buffer for optimizer step `step` (t, 1-based: the first update is t = 1):
//   {lr, beta1, beta2, eps, weight_decay, 1 - beta1^t, 1 - beta2^t, 1}
// Bias corrections in double from the betas' decimal values (torch: `1 - beta1 ** step` on Python
// floats), then rounded to float. The last slot (clip_scale) is 1 here; ops::clip_scale overwrites it on
// the device. Throws ls::Error when step is 0, a beta is outside [0, 1), or eps, weight_decay or lr is
// negative or not finite.
std::array<float, 8> hyper_values(const OptimizerHyper& h, float lr, uint32_t step);

}  // namespace ls::train
