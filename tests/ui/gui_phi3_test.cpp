// A Phi-3 model in the window (Xvfb when DISPLAY is unset, lavapipe, validation on): a random-weight
// Phi3ForCausalLM (support/tiny_model.h, longrope) with qwen2_tiny's tokenizer is dropped on the window with
// the settings' default targets (q_proj and v_proj, which Phi-3 does not have: the Train panel shows its
// projections and moves the ticked q_proj and v_proj to qkv_proj), trains 3 steps from the Train panel's
// Start. Asserts: no script error, no validation message, the run finished in the store with
// "targets": ["qkv_proj"] in its config, and the adapter written with target_modules ["qkv_proj"].
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gui_run.h"
#include "store/run_store.h"
#include "support/tiny_model.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

TEST(GuiPhi3, TrainsWithItsFusedTargets) {
  const fs::path out = fs::path(LS_BINARY_DIR) / "gui_phi3_test";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path src = LS_SOURCE_DIR, store = out / "runs.sqlite", model = out / "phi3";
  test::write_random_model(model, nlohmann::json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "vocab_size": 618, "hidden_size": 72, "intermediate_size": 100,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
      "original_max_position_embeddings": 64, "eos_token_id": 617, "bos_token_id": null,
      "rope_scaling": {"type": "longrope", "short_factor": [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8],
                       "long_factor": [2, 3, 4, 5, 6, 7, 8, 9, 10]}})"),
                           7000);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(src / "tests/fixtures/models/qwen2_tiny" / f, model / f);

  std::ofstream(out / "scenario.txt") << "timeout 120\n"
                                      << "frames 3\n"
                                      << "drop " << model.string() << "\n"
                                      << "wait_for model 30\n"
                                      << "click data.open\n"
                                      << "click browser.path\n"
                                      << "key ctrl+a\n"
                                      << "type " << (src / "assets/demo/tiny_chat.jsonl").string() << "\n"
                                      << "key enter\n"
                                      << "wait_for data 30\n"
                                      << "click train.steps\nkey ctrl+a\ntype 3\nkey enter\n"
                                      << "frames 3\n"
                                      << "click train.start\n"
                                      << "wait_for trained 90\n"
                                      << "frames 3\n"
                                      << "state " << (out / "state.json").string() << "\n"
                                      << "quit\n";
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
  test::ScriptRun app;
  ASSERT_NO_FATAL_FAILURE(test::run_scenario(binary, out, store, 1280, 720, app));
  const std::string& log = app.log;
  const nlohmann::json& state = app.state;
  EXPECT_EQ(state["script_error"], "") << log;
  EXPECT_EQ(state["validation_messages"], 0) << log;
  EXPECT_EQ(state["train_state"], "finished") << state.dump(2) << log;

  store::RunStore runs(store);
  ASSERT_EQ(runs.list_runs().size(), 1u) << state.dump(2);
  const auto run = runs.run(runs.list_runs().front().id);
  EXPECT_EQ(run.status, store::RunStatus::finished) << run.error;
  const auto config = nlohmann::json::parse(run.config_json);
  EXPECT_EQ(config["targets"], nlohmann::json::array({"qkv_proj"})) << run.config_json;
  const auto adapter = nlohmann::json::parse(test::read_text(run.out_dir / "adapter" / "adapter_config.json"));
  EXPECT_EQ(adapter["target_modules"], nlohmann::json::array({"qkv_proj"}));
}

}  // namespace
}  // namespace ls
