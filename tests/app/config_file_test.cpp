// `--batch --config FILE` through the binary: a TOML file (app/toml_config.h) sets any training option by
// its long name with underscores or hyphens, arrays of strings become comma lists, the command line wins
// over the file (the run's resolved config.json shows the values), and a syntax error, a table, an unknown
// key, a key given twice or a value of the wrong type gives one line on stderr naming the file, line and
// column, and exit code 1, before any training starts. The runs are one step of qwen2_tiny on the demo data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "app/run_app.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = LS_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_config_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The keys every run needs (a fast one), then `extra`.
  fs::path write_config(const std::string& extra) {
    const fs::path path = dir_ / "run.toml";
    write_text(path, "model = \"" + (kSource / "tests/fixtures/models/qwen2_tiny").string() + "\"\n" +
                         "data = \"" + (kSource / "assets/demo/tiny_chat.jsonl").string() + "\"\n" +
                         "store = \"" + (dir_ / "runs.sqlite").string() + "\"\n" + "steps = 1\nquiet = true\n" + extra);
    return path;
  }

  test::AppResult train(const std::string& extra, const std::vector<std::string>& args = {}) {
    std::vector<std::string> all = {"--batch", "--config", write_config(extra).string(), "--out",
                                    (dir_ / "run").string()};
    all.insert(all.end(), args.begin(), args.end());
    return test::run_app(all);
  }

  nlohmann::json resolved() { return nlohmann::json::parse(read_text(dir_ / "run" / "config.json")); }

  // One line on stderr, exit code 1, nothing trained; the line holds every piece of `want`.
  void expect_error(const std::string& extra, const std::vector<std::string>& want) {
    auto r = train(extra);
    EXPECT_EQ(r.code, 1) << r.err;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    for (const auto& w : want) EXPECT_NE(r.err.find(w), std::string::npos) << "\"" << w << "\" not in: " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "run")) << "trained anyway";
  }

  fs::path dir_;
};

TEST_F(ConfigFile, UnderscoreAndHyphenKeysBothSetOptions) {
  auto r = train(
      "batch_size = 2\n"
      "seq-len = 256\n"
      "grad_accum = 2\n"
      "lr = 1e-3\n"
      "alpha = 8\n"               // an integer for a float option
      "rslora = true\n"
      "targets = [\"q_proj\", \"v_proj\", \"o_proj\"]\n"
      "schedule = \"cosine\"\n");
  ASSERT_EQ(r.code, 0) << r.err;
  auto c = resolved();
  EXPECT_EQ(c["batch_size"], 2);
  EXPECT_EQ(c["seq_len"], 256);
  EXPECT_EQ(c["grad_accum"], 2);
  EXPECT_FLOAT_EQ(c["lr"].get<float>(), 1e-3f);
  EXPECT_EQ(c["alpha"], 8.0);
  EXPECT_EQ(c["rslora"], true);
  EXPECT_EQ(c["targets"], nlohmann::json({"q_proj", "v_proj", "o_proj"}));
  EXPECT_EQ(c["schedule"], "cosine");
  EXPECT_EQ(c["steps"], 1);
}

TEST_F(ConfigFile, CommandLineWinsOverTheFile) {
  auto r = train("batch-size = 2\nrank = 4\nseq_len = 256\n", {"--batch-size", "1", "--seq-len", "200"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto c = resolved();
  EXPECT_EQ(c["batch_size"], 1);
  EXPECT_EQ(c["seq_len"], 200);
  EXPECT_EQ(c["rank"], 4);  // from the file
}

TEST_F(ConfigFile, SyntaxErrorNamesFileLineAndColumn) {
  // Line 6 of the file (five lines of write_config before it), column 8: the second '='.
  expect_error("rank = = 4\n", {"run.toml:6:8", "TOML syntax error"});
  expect_error("targets = [\"q_proj\"\n", {"run.toml:6:", "TOML syntax error", "end-of-file"});
  expect_error("steps = 2\n", {"run.toml:6:", "TOML syntax error", "redefine", "steps"});
}

TEST_F(ConfigFile, UnknownKeyTableOrKeyTwice) {
  expect_error("learning_rate = 1e-4\n", {"run.toml:6:1", "unknown key \"learning_rate\"", "--learning-rate"});
  expect_error("[lora]\nrank = 4\n", {"run.toml:6:", "\"lora\" is a table"});
  expect_error("lora = { rank = 4 }\n", {"run.toml:6:1", "\"lora\" is a table"});
  expect_error("batch_size = 2\nbatch-size = 3\n", {"run.toml:7:1", "\"batch-size\"", "\"batch_size\" already set"});
  expect_error("config = \"other.toml\"\n", {"run.toml:6:1", "cannot be set from a config file"});
}

TEST_F(ConfigFile, WrongTypes) {
  expect_error("rank = \"four\"\n", {"run.toml:6:1", "\"rank\"", "non-negative integer", "not a string"});
  expect_error("rank = -4\n", {"run.toml:6:1", "\"rank\"", "below 0"});
  expect_error("epochs = 1.5\n", {"run.toml:6:1", "--epochs", "not a float"});
  expect_error("lr = \"3e-4\"\n", {"run.toml:6:1", "--lr takes a number", "not a string"});
  expect_error("rslora = 1\n", {"run.toml:6:1", "--rslora takes true or false", "not an integer"});
  expect_error("targets = [1, 2]\n", {"run.toml:6:1", "--targets", "array of strings"});
  expect_error("batch_size = [2]\n", {"run.toml:6:1", "--batch-size", "not an array"});
}

TEST_F(ConfigFile, MissingFile) {
  auto r = test::run_app({"--batch", "--config", (dir_ / "absent.toml").string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find("absent.toml"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ls
