// config_from_json() inverts config_json(): every saved option comes back (the JSON of the round trip is
// the same text), absent keys keep the base's values, and bad values are named with the key.
#include <gtest/gtest.h>

#include "error.h"
#include "train/config_from_json.h"

namespace ls::train {
namespace {

TEST(ConfigFromJson, RoundTripsEverySavedOption) {
  TrainConfig c;
  c.model = "/m/qwen";
  c.data = "/d/train.jsonl";
  c.out = "/runs/a";
  c.data_options.validation_file = "/d/val.jsonl";
  c.data_options.validation_fraction = 0.125;
  c.targets = {model::LoraTarget::k_proj, model::LoraTarget::down_proj};
  c.rank = 12;
  c.alpha = 7.5f;
  c.dropout = 0.05f;
  c.rslora = true;
  c.batch_size = 3;
  c.grad_accum = 5;
  c.data_options.max_seq_len = 333;
  c.steps = 77;
  c.data_options.epochs = 4;
  c.schedule.lr = 3.3e-4f;
  c.schedule.kind = ScheduleOptions::Cosine;
  c.schedule.warmup_steps = 9;
  c.optimizer = {.beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.01f, .max_grad_norm = 0.7f};
  c.grad_checkpoint = true;
  c.data_options.train_on_prompt = true;
  c.data_options.pack = true;
  c.data_options.skip_bad_lines = true;
  c.quantize = QuantType::nf4;
  c.data_options.shuffle = false;
  c.data_options.seed = 99;
  c.seed = 1234567890123ull;
  c.val_every = 6;
  c.save_every = 8;
  c.resume = "/runs/a/checkpoint-8";
  c.on_non_finite = NonFinitePolicy::skip;
  const std::string text = config_json(c);
  const TrainConfig back = config_from_json(text, "x");
  EXPECT_EQ(config_json(back), text);
  EXPECT_EQ(back.schedule.lr, c.schedule.lr);  // floats exactly
  EXPECT_EQ(back.seed, c.seed);
  EXPECT_TRUE(back.data_options.skip_bad_lines);
  EXPECT_EQ(back.quantize, QuantType::nf4);
  EXPECT_EQ(back.on_non_finite, NonFinitePolicy::skip);
}

TEST(ConfigFromJson, AbsentKeysKeepTheBaseAndBadValuesAreNamed) {
  TrainConfig base;
  base.rank = 16;
  base.store = "/s/runs.sqlite";
  const TrainConfig c = config_from_json(R"({"steps": 5})", "x", base);
  EXPECT_EQ(c.steps, 5u);
  EXPECT_EQ(c.rank, 16u);
  EXPECT_EQ(c.store, base.store);
  auto message = [](const char* text) {
    try {
      config_from_json(text, "run 3");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"rank": "eight"})").find("run 3: \"rank\""), std::string::npos) << message(R"({"rank": "eight"})");
  EXPECT_NE(message(R"({"targets": ["qq_proj"]})").find("qq_proj"), std::string::npos);
  EXPECT_NE(message(R"({"schedule": "zigzag"})").find("zigzag"), std::string::npos);
  EXPECT_NE(message(R"({"quantize": "int3"})").find("\"quantize\": \"int3\" is not nf4, q8 or none"), std::string::npos);
  EXPECT_NE(message(R"({"on_nonfinite": "ignore"})").find("\"on_nonfinite\": \"ignore\" is not stop or skip"),
            std::string::npos);
  EXPECT_NE(message("[1]").find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace ls::train
