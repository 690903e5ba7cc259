// fit_targets (ui/views.h): the Train panel's ticked targets moved to the projections the loaded model has,
// both ways between Phi-3's fused projections and their parts, the others left as they are.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ui/views.h"

namespace ls::ui {
namespace {

using model::LoraTarget;

model::ModelConfig config(const char* arch) {
  return model::parse_config({{"architectures", {arch}}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 96},
                              {"vocab_size", 100}},
                             "config.json");
}

std::vector<LoraTarget> ticked(const TrainSettings& s) {
  std::vector<LoraTarget> out;
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)
    if (s.targets[i]) out.push_back(LoraTarget(i));
  return out;
}

TEST(FitTargets, DefaultsMoveToPhi3sFusedProjectionsAndBack) {
  TrainSettings s;  // q_proj, v_proj
  fit_targets(s, config("Qwen2ForCausalLM"));
  EXPECT_EQ(ticked(s), (std::vector<LoraTarget>{LoraTarget::q_proj, LoraTarget::v_proj}));
  fit_targets(s, config("Phi3ForCausalLM"));
  EXPECT_EQ(ticked(s), (std::vector<LoraTarget>{LoraTarget::qkv_proj}));
  s.targets[size_t(LoraTarget::up_proj)] = true;    // a part Phi-3 lacks
  s.targets[size_t(LoraTarget::down_proj)] = true;  // one it has
  fit_targets(s, config("Phi3ForCausalLM"));
  EXPECT_EQ(ticked(s), (std::vector<LoraTarget>{LoraTarget::down_proj, LoraTarget::qkv_proj, LoraTarget::gate_up_proj}));
  fit_targets(s, config("LlamaForCausalLM"));
  EXPECT_EQ(ticked(s), (std::vector<LoraTarget>{LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj,
                                                LoraTarget::gate_proj, LoraTarget::up_proj, LoraTarget::down_proj}));
}

}  // namespace
}  // namespace ls::ui
