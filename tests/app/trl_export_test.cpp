// `lorastudio export --trl DIR`: from the folder of a short --batch run on the fixture model, trl_config.json
// holds the run's values (parsed and compared one by one: LoRA, optimizer, schedule, steps, batch, sequence
// length, seeds, data, validation and checkpoint cadence), train_trl.py is app/trl/train_trl.py byte for byte
// and python3 compiles it and runs its --help (which needs no torch); the run store's number, the run's
// config.json and a --batch TOML file describe the same run; --copy-data and --init-adapter make a folder
// that can move; bad sources name the file or option. Running the script needs torch, transformers and
// peft: tests/fixtures/run_trl_export.sh does that on the GPU machine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "app/run_app.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = LS_SOURCE_DIR;
const fs::path kModel = kSource / "tests/fixtures/models/qwen2_tiny";
const fs::path kData = kSource / "assets/demo/tiny_chat.jsonl";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

bool have_python() { return std::system("python3 --version >/dev/null 2>&1") == 0; }

// One --batch run shared by the tests (3 steps on the fixture model, about a second).
class TrlExport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ls_trl_export_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto r = test::run_app({"--batch", "--model", kModel.string(), "--data", kData.string(), "--val-data", kData.string(),
                            "--out", (dir_ / "run").string(), "--store", store().string(), "--steps", "3", "--lr", "3e-3",
                            "--rank", "4", "--alpha", "8", "--rslora", "--targets", "q_proj,v_proj,up_proj",
                            "--batch-size", "2", "--grad-accum", "2", "--seq-len", "200", "--warmup", "1", "--schedule",
                            "cosine", "--weight-decay", "0.01", "--max-grad-norm", "0.5", "--seed", "7", "--val-every",
                            "2", "--save-every", "2", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path store() { return dir_ / "runs.sqlite"; }

  static test::AppResult export_trl(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"export", "--trl"};
    all.insert(all.end(), args.begin(), args.end());
    return test::run_app(all);
  }

  static inline fs::path dir_;
};

TEST_F(TrlExport, ConfigHoldsTheRunsValues) {
  const fs::path out = dir_ / "trl";
  auto r = export_trl({out.string(), "--run", (dir_ / "run").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("train_trl.py"), std::string::npos) << r.err;
  const json c = json::parse(read_text(out / "trl_config.json"));

  EXPECT_EQ(c["model"], kModel.string());
  EXPECT_TRUE(c["init_adapter"].is_null());
  const json& l = c["lora"];
  EXPECT_EQ(l["r"], 4);
  EXPECT_EQ(l["lora_alpha"], 8.0);
  EXPECT_EQ(l["lora_dropout"], 0.0);
  EXPECT_EQ(l["target_modules"], json({"q_proj", "v_proj", "up_proj"}));
  EXPECT_EQ(l["use_rslora"], true);
  EXPECT_EQ(l["bias"], "none");
  EXPECT_EQ(l["task_type"], "CAUSAL_LM");

  const json& t = c["training"];
  EXPECT_EQ(t["learning_rate"].get<double>(), 0.003);  // the decimal, not float(3e-3) widened
  EXPECT_EQ(t["lr_scheduler_type"], "cosine");
  EXPECT_EQ(t["warmup_steps"], 1);
  EXPECT_EQ(t["max_steps"], 3);
  EXPECT_EQ(t["num_train_epochs"], 3);
  EXPECT_EQ(t["per_device_train_batch_size"], 2);
  EXPECT_EQ(t["gradient_accumulation_steps"], 2);
  EXPECT_EQ(t["weight_decay"].get<double>(), 0.01);
  EXPECT_EQ(t["adam_beta1"].get<double>(), 0.9);
  EXPECT_EQ(t["adam_beta2"].get<double>(), 0.999);
  EXPECT_EQ(t["adam_epsilon"].get<double>(), 1e-8);
  EXPECT_EQ(t["max_grad_norm"].get<double>(), 0.5);
  EXPECT_EQ(t["optim"], "adamw_torch");
  EXPECT_EQ(t["seed"], 7);
  EXPECT_EQ(t["data_seed"], 7);
  EXPECT_EQ(t["save_strategy"], "steps");
  EXPECT_EQ(t["save_steps"], 2);
  EXPECT_EQ(t["eval_strategy"], "steps");
  EXPECT_EQ(t["eval_steps"], 2);
  EXPECT_EQ(t["remove_unused_columns"], false);

  const json& d = c["data"];
  EXPECT_EQ(d["train"], kData.string());
  EXPECT_EQ(d["validation"], kData.string());
  EXPECT_EQ(d["max_seq_len"], 200);
  EXPECT_EQ(d["train_on_prompt"], false);
  EXPECT_EQ(d["pack"], false);
  EXPECT_EQ(d["seed"], 7);

  // The script is the embedded app/trl/train_trl.py, executable; the README says how to run it.
  EXPECT_EQ(read_text(out / "train_trl.py"), read_text(kSource / "app/trl/train_trl.py"));
  EXPECT_NE(fs::status(out / "train_trl.py").permissions() & fs::perms::owner_exec, fs::perms::none);
  const std::string readme = read_text(out / "README.md");
  EXPECT_NE(readme.find("accelerate launch train_trl.py"), std::string::npos) << readme;
  EXPECT_NE(readme.find("LoRA r 4, alpha 8 (rsLoRA) on q_proj,v_proj,up_proj; lr 0.003, cosine schedule"), std::string::npos)
      << readme;

  if (!have_python()) GTEST_SKIP() << "python3 is not installed: the script's compile check did not run";
  const std::string script = (out / "train_trl.py").string();
  EXPECT_EQ(std::system(("python3 -m py_compile '" + script + "'").c_str()), 0);
  const fs::path help = dir_ / "help.txt";
  EXPECT_EQ(std::system(("python3 '" + script + "' --help >'" + help.string() + "' 2>&1").c_str()), 0) << read_text(help);
  EXPECT_NE(read_text(help).find("--init-adapter"), std::string::npos) << read_text(help);
}

TEST_F(TrlExport, RunNumberConfigJsonAndTomlDescribeTheSameRun) {
  auto values = [](const fs::path& out) {
    json c = json::parse(read_text(out / "trl_config.json"));
    c.erase("lorastudio");  // says where the values came from
    return c;
  };
  ASSERT_EQ(export_trl({(dir_ / "by-folder").string(), "--run", (dir_ / "run").string()}).code, 0);
  auto r = export_trl({(dir_ / "by-number").string(), "--run", "1", "--store", store().string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(values(dir_ / "by-number"), values(dir_ / "by-folder"));
  r = export_trl({(dir_ / "by-json").string(), "--config", (dir_ / "run" / "config.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(values(dir_ / "by-json"), values(dir_ / "by-folder"));

  // A TOML file for --batch --config: its keys, the rest defaults (epochs, constant schedule with warmup).
  write_text(dir_ / "run.toml", "model = \"" + kModel.string() + "\"\ndata = \"" + kData.string() +
                                    "\"\nrank = 16\nalpha = 32\ntargets = [\"q_proj\", \"o_proj\"]\n"
                                    "schedule = \"constant\"\nwarmup = 5\nepochs = 2\ntrain_on_prompt = true\npack = true\n");
  r = export_trl({(dir_ / "by-toml").string(), "--config", (dir_ / "run.toml").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json c = values(dir_ / "by-toml");
  EXPECT_EQ(c["lora"]["r"], 16);
  EXPECT_EQ(c["lora"]["lora_alpha"], 32.0);
  EXPECT_EQ(c["lora"]["target_modules"], json({"q_proj", "o_proj"}));
  EXPECT_EQ(c["lora"]["use_rslora"], false);
  EXPECT_EQ(c["training"]["lr_scheduler_type"], "constant_with_warmup");  // transformers' "constant" has no warmup
  EXPECT_EQ(c["training"]["warmup_steps"], 5);
  EXPECT_EQ(c["training"]["max_steps"], -1);
  EXPECT_EQ(c["training"]["num_train_epochs"], 2);
  EXPECT_EQ(c["training"]["learning_rate"].get<double>(), 0.0002);
  EXPECT_EQ(c["training"]["save_strategy"], "no");
  EXPECT_EQ(c["training"]["eval_strategy"], "no");
  EXPECT_EQ(c["data"]["validation"], nullptr);
  EXPECT_EQ(c["data"]["train_on_prompt"], true);
  EXPECT_EQ(c["data"]["pack"], true);
  EXPECT_EQ(c["data"]["max_seq_len"], 2048);
}

TEST_F(TrlExport, CopyDataAndInitAdapterMakeAFolderThatMoves) {
  const fs::path out = dir_ / "bundle";
  auto r = export_trl({out.string(), "--run", (dir_ / "run").string(), "--init-adapter", (dir_ / "run" / "adapter").string(),
                       "--copy-data"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json c = json::parse(read_text(out / "trl_config.json"));
  EXPECT_EQ(c["data"]["train"], "data/tiny_chat.jsonl");
  EXPECT_EQ(c["data"]["validation"], "data/validation-tiny_chat.jsonl");
  EXPECT_EQ(c["init_adapter"], "init_adapter");
  EXPECT_EQ(read_text(out / "data/tiny_chat.jsonl"), read_text(kData));
  EXPECT_EQ(read_text(out / "data/validation-tiny_chat.jsonl"), read_text(kData));
  EXPECT_EQ(read_text(out / "init_adapter/adapter_model.safetensors"),
            read_text(dir_ / "run" / "adapter" / "adapter_model.safetensors"));
  EXPECT_TRUE(fs::exists(out / "init_adapter/adapter_config.json"));
}

// The script reads JSONL by lorastudio's rules: the same lines are bad, with the same messages (the
// JSON parsers' own descriptions of a syntax error aside).
TEST_F(TrlExport, ScriptRefusesTheLinesLorastudioRefuses) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const fs::path out = dir_ / "reader";
  ASSERT_EQ(export_trl({out.string(), "--run", (dir_ / "run").string()}).code, 0);
  const fs::path data = dir_ / "problems.jsonl";
  write_text(data,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Yo\"}]}\n"
             "{\"text\": \"unterminated}\n[\"a\", \"list\"]\n{\"input\": \"Hi\"}\n{\"text\": \"Hi\", \"completion\": \"Yo\"}\n"
             "{\"text\": 42}\n{\"text\": \"\"}\n{\"prompt\": \"Hi\"}\n{\"completion\": \"Yo\"}\n{\"prompt\": \"Hi\", \"completion\": \"\"}\n"
             "{\"prompt\": [\"Hi\"], \"completion\": \"Yo\"}\n{\"messages\": \"Hi\"}\n{\"messages\": []}\n{\"messages\": [\"Hi\"]}\n"
             "{\"messages\": [{\"content\": \"Hi\"}]}\n{\"messages\": [{\"role\": \"bot\", \"content\": \"Hi\"}]}\n"
             "{\"messages\": [{\"role\": \"user\", \"content\": null}]}\n{\"messages\": [{\"role\": true, \"content\": \"Hi\"}]}\n"
             "\n{\"prompt\": \"\", \"completion\": \"Yo\", \"extra\": 1}\n");
  auto r = test::run_app({"--batch", "--model", kModel.string(), "--data", data.string(), "--out", (dir_ / "run-problems").string(),
                          "--store", store().string(), "--steps", "1", "--skip-bad-lines", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string ours;
  const std::string skipped = "lorastudio: warning: skipped ";
  for (size_t at = 0; (at = r.err.find(skipped, at)) != std::string::npos;) {
    const size_t end = r.err.find('\n', at);
    ours += r.err.substr(at + skipped.size(), end - at - skipped.size()) + "\n";
    at = end;
  }
  const fs::path listing = dir_ / "reader.txt";
  const std::string python = "import sys; sys.path.insert(0, sys.argv[1]); import train_trl as t\n"
                             "for n, r in t.read_records(sys.argv[2]):\n"
                             "    if isinstance(r, t.BadLine): print(f'{sys.argv[2]}:{n}: {r}')\n";
  write_text(dir_ / "reader.py", python);
  ASSERT_EQ(std::system(("python3 '" + (dir_ / "reader.py").string() + "' '" + out.string() + "' '" + data.string() + "' >'" +
                         listing.string() + "' 2>&1").c_str()),
            0)
      << read_text(listing);
  std::string theirs = read_text(listing);
  // "not valid JSON: " is followed by each parser's own description.
  auto cut_details = [](std::string text) {
    const std::string marker = "not valid JSON: ";
    for (size_t at = 0; (at = text.find(marker, at)) != std::string::npos;) {
      at += marker.size();
      text.erase(at, text.find('\n', at) - at);
    }
    return text;
  };
  EXPECT_EQ(cut_details(theirs), cut_details(ours));
  EXPECT_NE(ours.find(":18: messages[0].role must be a string, got boolean"), std::string::npos) << ours;
}

TEST_F(TrlExport, ErrorsNameTheProblem) {
  auto fails = [](const test::AppResult& r, const std::string& want) {
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << "\"" << want << "\" not in: " << r.err;
  };
  fails(export_trl({(dir_ / "e1").string()}), "--run RUN");
  fails(test::run_app({"export", "--merge", "--trl", (dir_ / "e2").string(), "--run", "1"}), "one at a time");
  fails(export_trl({(dir_ / "e3").string(), "--run", "999", "--store", store().string()}), "no such run");
  fails(export_trl({(dir_ / "e4").string(), "--run", (dir_ / "no-such-run").string()}), "no-such-run/config.json: cannot open");
  write_text(dir_ / "broken.json", "{\"rank\": 4");
  fails(export_trl({(dir_ / "e5").string(), "--config", (dir_ / "broken.json").string()}), "broken.json: not valid JSON");
  write_text(dir_ / "partial.json", "{\"rank\": 4}");
  fails(export_trl({(dir_ / "e6").string(), "--config", (dir_ / "partial.json").string()}), "partial.json: \"targets\" is missing");
  write_text(dir_ / "nomodel.toml", "rank = 4\n");
  fails(export_trl({(dir_ / "e7").string(), "--config", (dir_ / "nomodel.toml").string()}), "nomodel.toml: sets no model");
  fails(export_trl({(dir_ / "e8").string(), "--run", (dir_ / "run").string(), "--init-adapter", dir_.string()}),
        "adapter_config.json: missing");
  // A folder with other files: refused, then --force rewrites ours and keeps the rest.
  fs::create_directories(dir_ / "full");
  write_text(dir_ / "full" / "mine.txt", "keep");
  fails(export_trl({(dir_ / "full").string(), "--run", (dir_ / "run").string()}), "--force");
  EXPECT_EQ(export_trl({(dir_ / "full").string(), "--run", (dir_ / "run").string(), "--force"}).code, 0);
  EXPECT_EQ(read_text(dir_ / "full" / "mine.txt"), "keep");
  EXPECT_TRUE(fs::exists(dir_ / "full" / "train_trl.py"));
  for (const char* d : {"e1", "e2", "e3", "e4", "e5", "e6", "e7"}) EXPECT_FALSE(fs::exists(dir_ / d)) << d;
}

}  // namespace
}  // namespace ls
