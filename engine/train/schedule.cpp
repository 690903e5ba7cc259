#include "train/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "error.h"
#include "util/decimal.h"

namespace ls::train {

namespace {
// The decay's factor after warmup, before the min_lr_ratio lift.
double decay_factor(const ScheduleOptions& o, int64_t s) {
  const int64_t W = o.warmup_steps, N = o.total_steps;
  const double span = double(std::max<int64_t>(1, N - W));
  switch (o.kind) {
    case ScheduleOptions::Constant: return 1.0;
    case ScheduleOptions::Linear: return double(N - s) / span;
    case ScheduleOptions::Cosine: {
      const double progress = double(s - W) / span;
      return 0.5 * (1.0 + std::cos(std::numbers::pi * 0.5 * 2.0 * progress));
    }
  }
  return 1.0;
}
}  // namespace

float lr_at(const ScheduleOptions& o, uint32_t step) {
  if (!(o.lr >= 0) || !std::isfinite(o.lr))
    throw Error("learning-rate schedule: lr is " + std::to_string(o.lr) + "; expected a finite number >= 0");
  if (!(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1))
    throw Error("learning-rate schedule: min_lr_ratio is " + std::to_string(o.min_lr_ratio) + "; expected 0 to 1");
  const int64_t s = step;
  double factor;
  if (s < int64_t(o.warmup_steps)) {
    factor = double(s) / double(std::max<uint32_t>(1, o.warmup_steps));
  } else if (o.kind == ScheduleOptions::Constant) {
    factor = 1.0;
  } else {
    const double r = decimal_double(o.min_lr_ratio);
    factor = std::max(0.0, decay_factor(o, s) * (1 - r) + r);
  }
  return float(decimal_double(o.lr) * factor);
}

std::optional<ScheduleOptions::Kind> parse_schedule_kind(std::string_view name) {
  if (name == "constant" || name == "constant_with_warmup") return ScheduleOptions::Constant;
  if (name == "linear") return ScheduleOptions::Linear;
  if (name == "cosine") return ScheduleOptions::Cosine;
  return std::nullopt;
}

const char* schedule_kind_name(ScheduleOptions::Kind kind) {
  switch (kind) {
    case ScheduleOptions::Constant: return "constant";
    case ScheduleOptions::Linear: return "linear";
    case ScheduleOptions::Cosine: return "cosine";
  }
  return "?";
}

std::array<float, 8> hyper_values(const OptimizerHyper& h, float lr, uint32_t step) {
  auto fail = [](const std::string& what) { throw Error("optimizer hyper-parameters: " + what); };
  if (step == 0) fail("step is 0; the first update is step 1");
  // torch.optim.AdamW's own checks.
  if (!(h.beta1 >= 0 && h.beta1 < 1)) fail("beta1 is " + std::to_string(h.beta1) + "; expected 0 <= beta1 < 1");
  if (!(h.beta2 >= 0 && h.beta2 < 1)) fail("beta2 is " + std::to_string(h.beta2) + "; expected 0 <= beta2 < 1");
  if (!(h.eps >= 0) || !std::isfinite(h.eps)) fail("eps is " + std::to_string(h.eps) + "; expected a finite number >= 0");
  if (!(h.weight_decay >= 0) || !std::isfinite(h.weight_decay))
    fail("weight_decay is " + std::to_string(h.weight_decay) + "; expected a finite number >= 0");
  if (!(lr >= 0) || !std::isfinite(lr)) fail("lr is " + std::to_string(lr) + "; expected a finite number >= 0");
  const double t = double(step);
  const double bias_correction1 = 1 - std::pow(decimal_double(h.beta1), t);
  const double bias_correction2 = 1 - std::pow(decimal_double(h.beta2), t);
  return {lr, h.beta1, h.beta2, h.eps, h.weight_decay, float(bias_correction1), float(bias_correction2), 1.0f};
}

}  // namespace ls::train
