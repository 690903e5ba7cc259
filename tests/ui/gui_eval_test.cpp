// The Runs panel's Evaluate: a `lorastudio --batch` run holds out a quarter of its 16 examples; the window (Xvfb when
// DISPLAY is unset, lavapipe, validation on) opens the model, selects the run, clicks Evaluate and waits for the
// Evaluate panel's rows, then unticks its "compare with the base model". Asserts: the rows are the held-out lines
// (as infer::held_out_records finds them for the run's options), written to the run folder; each adapter and base
// reply equals what `lorastudio generate --prompts --compare-base` gives for those lines; the panel's settings
// saved with the UI's; a screenshot of the panel; no validation message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gui_run.h"
#include "infer/eval_set.h"
#include "model/config.h"
#include "store/run_store.h"
#include "train/config_from_json.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> read_rows(const fs::path& p) {
  std::vector<nlohmann::json> rows;
  std::istringstream lines(test::read_text(p));
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

TEST(GuiEval, EvaluateAnswersTheHeldOutExamplesLikeTheCommandLine) {
  const fs::path out = fs::path(LS_BINARY_DIR) / "gui_eval_test";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path src = LS_SOURCE_DIR, model = src / "tests/fixtures/models/qwen2_tiny";
  const fs::path store = out / "runs.sqlite", run_dir = out / "eval-run", data = out / "data.jsonl";
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
  {  // the demo's first 16 questions
    std::ifstream demo(src / "assets/demo/demo_train.jsonl");
    std::ofstream f(data);
    std::string line;
    for (int i = 0; i < 16 && std::getline(demo, line); ++i) f << line << "\n";
  }
  const std::string train = "'" + std::string(binary) + "' --batch --model '" + model.string() + "' --data '" + data.string() +
                            "' --out '" + run_dir.string() + "' --steps 4 --val-fraction 0.25 --store '" + store.string() +
                            "' --quiet >'" + (out / "batch_log.txt").string() + "' 2>&1";
  ASSERT_EQ(std::system(train.c_str()), 0) << test::read_text(out / "batch_log.txt");
  int64_t id = 0;
  train::TrainConfig config;
  {
    store::RunStore runs(store);
    ASSERT_EQ(runs.list_runs().size(), 1u);
    id = runs.list_runs().front().id;
    config = train::config_from_json(runs.run(id).config_json, "run", {});
  }

  std::ofstream(out / "scenario.txt") << "timeout 240\n"
                                      << "drop " << model.string() << "\n"
                                      << "wait_for model 60\n"
                                      << "wait_for run_metrics:eval-run>=1 60\n"
                                      << "frames 3\n"
                                      << "click runs.row." << id << "\n"
                                      << "frames 3\n"
                                      << "click runs.evaluate\n"
                                      << "wait_for eval_done 200\n"
                                      << "click eval.compare_base\n"
                                      << "frames 5\n"
                                      << "screenshot " << (out / "eval.png").string() << "\n"
                                      << "state " << (out / "state.json").string() << "\n"
                                      << "quit\n";
  test::ScriptRun app;
  ASSERT_NO_FATAL_FAILURE(test::run_scenario(binary, out, store, 1280, 800, app));
  const std::string& log = app.log;
  const nlohmann::json& state = app.state;
  EXPECT_EQ(state["script_error"], "");
  EXPECT_EQ(state["validation_messages"], 0) << log;
  EXPECT_EQ(state["errors"].size(), 0u) << state.dump(2);
  ASSERT_EQ(state["eval"]["error"], "") << state.dump(2);
  EXPECT_TRUE(fs::exists(out / "eval.png"));

  // The held-out lines, as training held them out.
  const fs::path file = state["eval"]["file"].get<std::string>();
  EXPECT_EQ(file.parent_path(), run_dir);
  EXPECT_FALSE(fs::exists(file.string() + ".partial"));
  const auto rows = read_rows(file);
  const auto files = infer::ChatModelFiles::load(model, model::load_config(model));
  const auto held = infer::held_out_records(data, files.tokenizer, files.chat, config.data_options);
  ASSERT_EQ(rows.size(), 4u);
  ASSERT_EQ(held.size(), rows.size());
  EXPECT_EQ(state["eval"]["rows"], rows.size());
  EXPECT_EQ(state["eval"]["replies"], 2 * rows.size());
  // The panel's settings are kept with the others: "compare with the base model" was unticked after the evaluation.
  {
    store::RunStore runs(store);
    const auto saved = runs.setting("ui.settings");
    ASSERT_TRUE(saved.has_value());
    const auto settings = nlohmann::json::parse(*saved);
    EXPECT_EQ(settings["eval"]["compare_base"], false) << *saved;
    EXPECT_EQ(settings["eval"]["max_tokens"], 128) << *saved;
  }

  // The command line's replies to the same lines.
  std::vector<std::string> data_lines;
  {
    std::ifstream in(data);
    for (std::string line; std::getline(in, line);) data_lines.push_back(line);
  }
  {
    std::ofstream f(out / "held.jsonl");
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i]["line"], held[i].line);
      f << data_lines.at(rows[i]["line"].get<size_t>() - 1) << "\n";
    }
  }
  const std::string generate = "'" + std::string(binary) + "' generate --model '" + model.string() + "' --adapter '" +
                               (run_dir / "adapter").string() + "' --prompts '" + (out / "held.jsonl").string() +
                               "' --compare-base --max-tokens 128 --out '" + (out / "cli.jsonl").string() + "' 2>'" +
                               (out / "cli_log.txt").string() + "'";
  ASSERT_EQ(std::system(generate.c_str()), 0) << test::read_text(out / "cli_log.txt");
  const auto cli = read_rows(out / "cli.jsonl");
  ASSERT_EQ(cli.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["reference"], cli[i]["reference"]) << i;
    EXPECT_EQ(rows[i]["reply"], cli[i]["reply"]) << i;
    EXPECT_EQ(rows[i]["base_reply"], cli[i]["base_reply"]) << i;
    EXPECT_EQ(rows[i]["new_tokens"], cli[i]["new_tokens"]) << i;
    EXPECT_EQ(rows[i]["stop"], cli[i]["stop"]) << i;
    EXPECT_EQ(rows[i]["base_stop"], cli[i]["base_stop"]) << i;
  }
}

}  // namespace
}  // namespace ls
