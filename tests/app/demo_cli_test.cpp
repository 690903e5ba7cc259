// `lorastudio --demo --steps 5` as a new user (and the .deb test) runs it: exit 0; the first lines say
// the model is tiny and untrained and what to download for real work; the demo model is made in
// $XDG_DATA_HOME/lorastudio (here a folder of the build tree, never the user's home; that a second run
// finds it intact is tests/demo's); the adapter is written to --out; the run is in the --store run
// store, finished, with its loss curve (a row per step) and a validation loss from the held-out split;
// and three held-out questions are answered by the base model and by the adapter. (The full demo,
// minutes long, is no test; scripts/run.sh runs it.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "app/run_app.h"
#include "store/run_store.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DemoCli, FiveStepsWriteAnAdapterAndARunAndPrintBothAnswers) {
  const fs::path dir = fs::path(LS_BINARY_DIR) / "demo_cli_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  setenv("XDG_DATA_HOME", (dir / "xdg-data").c_str(), 1);
  const fs::path out = dir / "run", store = dir / "store/runs.sqlite";

  auto r = test::run_app({"--demo", "--steps", "5", "--out", out.string(), "--store", store.string()});
  std::printf("%s\n--- stderr\n%s\n", r.out.c_str(), r.err.c_str());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string intro = r.out.substr(0, r.out.find("Training a LoRA adapter"));
  EXPECT_NE(intro.find("tiny and untrained"), std::string::npos);
  EXPECT_NE(intro.find("random weights"), std::string::npos);
  EXPECT_NE(intro.find("huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct"), std::string::npos);
  EXPECT_NE(intro.find("git clone https://huggingface.co/"), std::string::npos);
  EXPECT_NE(r.err.find("made the demo model"), std::string::npos) << "the first run makes it";
  EXPECT_TRUE(fs::exists(dir / "xdg-data/lorastudio/demo-model-v1/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "xdg-data/lorastudio/demo-data/demo_train.jsonl"));
  EXPECT_NE(r.err.find("step 5/5"), std::string::npos);

  EXPECT_TRUE(fs::exists(out / "adapter/adapter_config.json"));
  EXPECT_TRUE(fs::exists(out / "adapter/adapter_model.safetensors"));
  EXPECT_EQ(count(r.out, "\nQ: "), 3u);
  EXPECT_EQ(count(r.out, "  base model:   "), 3u);
  EXPECT_EQ(count(r.out, "  with adapter: "), 3u);

  store::RunStore runs(store);
  const auto list = runs.list_runs();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].status, store::RunStatus::finished);
  EXPECT_EQ(list[0].out_dir, out);
  const auto metrics = runs.metrics(list[0].id);
  ASSERT_EQ(metrics.size(), 5u) << "the loss curve: a row per step";
  EXPECT_TRUE(metrics.back().val_loss.has_value()) << "the held-out split is the validation data";
}

}  // namespace
}  // namespace ls
