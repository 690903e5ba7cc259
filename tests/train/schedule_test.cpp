// Learning-rate schedules and the optimizer's hyper buffer against hand-computed values (transformers'
// formulas evaluated by hand; exact where the arithmetic is exact, else 1 ulp of float).
#include "train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "error.h"

namespace ls::train {
namespace {

ScheduleOptions options(ScheduleOptions::Kind kind, uint32_t warmup, uint32_t total, float min_ratio = 0) {
  return {.kind = kind, .lr = 1e-3f, .warmup_steps = warmup, .total_steps = total, .min_lr_ratio = min_ratio};
}

TEST(Schedule, ConstantWithWarmup) {
  const auto o = options(ScheduleOptions::Constant, 10, 100);
  EXPECT_EQ(lr_at(o, 0), 0.0f);  // the first step of a warmup has lr 0, as in transformers
  EXPECT_EQ(lr_at(o, 5), 5e-4f);
  EXPECT_EQ(lr_at(o, 9), float(1e-3 * 0.9));
  EXPECT_EQ(lr_at(o, 10), 1e-3f);
  EXPECT_EQ(lr_at(o, 1000), 1e-3f);  // past total_steps
  EXPECT_EQ(lr_at(options(ScheduleOptions::Constant, 0, 100), 0), 1e-3f);
}

TEST(Schedule, LinearWithWarmup) {
  const auto o = options(ScheduleOptions::Linear, 10, 110);
  EXPECT_EQ(lr_at(o, 0), 0.0f);
  EXPECT_EQ(lr_at(o, 4), float(1e-3 * 0.4));
  EXPECT_EQ(lr_at(o, 10), 1e-3f);              // (110 - 10) / 100
  EXPECT_EQ(lr_at(o, 60), 5e-4f);              // 50 / 100
  EXPECT_EQ(lr_at(o, 85), float(1e-3 * 0.25));  // 25 / 100
  EXPECT_EQ(lr_at(o, 110), 0.0f);
  EXPECT_EQ(lr_at(o, 500), 0.0f);  // max(0, negative)
  // No warmup: step 0 has the full rate; N - s over N.
  EXPECT_EQ(lr_at(options(ScheduleOptions::Linear, 0, 4), 0), 1e-3f);
  EXPECT_EQ(lr_at(options(ScheduleOptions::Linear, 0, 4), 3), float(1e-3 * 0.25));
  // Warmup longer than training: max(1, N - W) = 1, and (N - s) < 0 after warmup.
  EXPECT_EQ(lr_at(options(ScheduleOptions::Linear, 10, 5), 10), 0.0f);
  // min_lr_ratio lifts the floor: f * (1 - r) + r.
  const auto lifted = options(ScheduleOptions::Linear, 10, 110, 0.1f);
  EXPECT_EQ(lr_at(lifted, 110), float(1e-3 * 0.1));
  EXPECT_EQ(lr_at(lifted, 60), float(1e-3 * 0.55));
  EXPECT_EQ(lr_at(lifted, 5), 5e-4f);  // warmup is unchanged
}

TEST(Schedule, CosineWithWarmup) {
  const auto o = options(ScheduleOptions::Cosine, 10, 110);
  EXPECT_EQ(lr_at(o, 0), 0.0f);
  EXPECT_EQ(lr_at(o, 5), 5e-4f);
  EXPECT_EQ(lr_at(o, 10), 1e-3f);                                   // cos(0) = 1
  EXPECT_FLOAT_EQ(lr_at(o, 35), 1e-3f * 0.853553390593f);           // 0.5 (1 + cos(pi / 4))
  EXPECT_FLOAT_EQ(lr_at(o, 60), 5e-4f);                             // 0.5 (1 + cos(pi / 2))
  EXPECT_FLOAT_EQ(lr_at(o, 85), 1e-3f * 0.146446609407f);           // 0.5 (1 + cos(3 pi / 4))
  EXPECT_EQ(lr_at(o, 110), 0.0f);                                   // 0.5 (1 + cos(pi)) = 0
  EXPECT_FLOAT_EQ(lr_at(o, 135), 1e-3f * 0.146446609407f);          // past N it climbs back, as transformers'
  const auto floor = options(ScheduleOptions::Cosine, 10, 110, 0.1f);
  EXPECT_FLOAT_EQ(lr_at(floor, 110), 1e-4f);                        // 0 * 0.9 + 0.1
  EXPECT_FLOAT_EQ(lr_at(floor, 60), 5.5e-4f);                       // 0.5 * 0.9 + 0.1
  EXPECT_EQ(lr_at(floor, 10), 1e-3f);
}

TEST(Schedule, LrIsTheDecimalItStandsFor) {
  // 2e-4f is 2.0000000949949026e-4; the schedule multiplies 2e-4 (the Python float), as torch does.
  const ScheduleOptions o{.kind = ScheduleOptions::Linear, .lr = 2e-4f, .warmup_steps = 0, .total_steps = 3};
  EXPECT_EQ(lr_at(o, 1), float(2e-4 * (2.0 / 3.0)));
}

TEST(Schedule, BadOptionsThrow) {
  auto o = options(ScheduleOptions::Linear, 0, 10);
  o.lr = -1;
  EXPECT_THROW(lr_at(o, 0), Error);
  o.lr = NAN;
  EXPECT_THROW(lr_at(o, 0), Error);
  o = options(ScheduleOptions::Cosine, 0, 10, 1.5f);
  try {
    lr_at(o, 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("min_lr_ratio"), std::string::npos) << e.what();
  }
}

TEST(Schedule, KindNames) {
  EXPECT_EQ(parse_schedule_kind("cosine"), ScheduleOptions::Cosine);
  EXPECT_EQ(parse_schedule_kind("linear"), ScheduleOptions::Linear);
  EXPECT_EQ(parse_schedule_kind("constant_with_warmup"), ScheduleOptions::Constant);
  EXPECT_EQ(parse_schedule_kind("polynomial"), std::nullopt);
  EXPECT_STREQ(schedule_kind_name(ScheduleOptions::Cosine), "cosine");
}

TEST(HyperValues, BiasCorrectionsByHand) {
  const OptimizerHyper h{.weight_decay = 0.01f};
  auto v = hyper_values(h, 3e-4f, 1);
  EXPECT_EQ(v[0], 3e-4f);
  EXPECT_EQ(v[1], 0.9f);
  EXPECT_EQ(v[2], 0.999f);
  EXPECT_EQ(v[3], 1e-8f);
  EXPECT_EQ(v[4], 0.01f);
  EXPECT_EQ(v[5], 0.1f);    // 1 - 0.9 = 0.09999999999999998 in double -> 0.1f
  EXPECT_EQ(v[6], 0.001f);  // 1 - 0.999 = 0.0010000000000000009 -> 0.001f
  EXPECT_EQ(v[7], 1.0f);    // clip_scale: the device overwrites it
  v = hyper_values(h, 3e-4f, 2);
  EXPECT_EQ(v[5], 0.19f);         // 1 - 0.81
  EXPECT_EQ(v[6], 0.001999f);     // 1 - 0.998001
  v = hyper_values(h, 3e-4f, 10);
  EXPECT_EQ(v[5], 0.6513215599f);  // 1 - 0.9^10 = 1 - 0.3486784401
  // From the decimal 0.9, not from 0.9f = 0.89999997615814209: 1 - 0.9f^10 would be 0.65132160...
  EXPECT_NE(v[5], float(1 - std::pow(double(0.9f), 10.0)));
}

TEST(HyperValues, BadValuesThrow) {
  EXPECT_THROW(hyper_values({}, 1e-3f, 0), Error);
  EXPECT_THROW(hyper_values({.beta1 = 1.0f}, 1e-3f, 1), Error);
  EXPECT_THROW(hyper_values({.beta2 = -0.1f}, 1e-3f, 1), Error);
  EXPECT_THROW(hyper_values({.weight_decay = -1.0f}, 1e-3f, 1), Error);
  EXPECT_THROW(hyper_values({}, INFINITY, 1), Error);
}

}  // namespace
}  // namespace ls::train
