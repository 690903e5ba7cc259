// The lorastudio binary, as users run it: `generate` on the golden fixture models prints exactly
// transformers' greedy text, and a broken model folder gives one clear error line on stderr and exit
// code 1 (truncated file, header length past EOF, overlapping offsets, wrong shape, missing tensor,
// unknown architecture, missing tokenizer), never a crash. `export --merge` writes a folder that generates
// what the base with the adapter generates.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/gguf_reader.h"
#include "model/safetensors.h"
#include "app/run_app.h"
#include "store/run_store.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models";

using Result = test::AppResult;
Result run(const std::vector<std::string>& args) { return test::run_app(args); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_cli_model_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::copy(kFixtures / "qwen2_tiny", dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // generate on the broken folder: exit 1, one line on stderr containing every piece of `want`.
  void expect_one_line_error(const std::vector<std::string>& want) {
    auto r = run({"generate", "--model", dir_.string(), "--prompt", "hi", "--max-tokens", "2"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    for (const auto& w : want) EXPECT_NE(r.err.find(w), std::string::npos) << "\"" << w << "\" not in: " << r.err;
  }

  // Rewrites model.safetensors through our writer after `edit` changes the tensor list.
  void rewrite_weights(const std::function<void(std::vector<model::TensorToWrite>&)>& edit) {
    std::string bytes;
    {
      auto st = model::SafeTensors::open(dir_ / "model.safetensors");
      std::vector<model::TensorToWrite> tensors;
      for (const auto& t : st.tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.bytes});
      edit(tensors);
      bytes = model::serialize_safetensors(tensors, {}, dir_ / "model.safetensors");
    }
    write_text(dir_ / "model.safetensors", bytes);
  }

  fs::path dir_;
};

TEST_F(Cli, GeneratePrintsTransformersGreedyText) {
  for (const char* name : {"qwen2_tiny", "llama_tiny"}) {
    auto expected = nlohmann::json::parse(read_text(kFixtures / name / "expected.json"));
    auto r = run({"generate", "--model", (kFixtures / name).string(), "--prompt", expected["messages"][0]["content"],
                  "--max-tokens", "20", "--ignore-eos", "--act", "f32"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expected["greedy_text"].get<std::string>() + "\n") << name;
    EXPECT_NE(r.err.find("decode 20 tokens"), std::string::npos) << r.err;
  }
}

// generate --prompts: every line of a JSON Lines file answered, several decoding together; the fixture's
// conversation (its reference answer dropped) gets transformers' greedy text among other prompts, the lines in the
// file's order, through "<out>.partial" into --out.
TEST_F(Cli, GeneratePromptsAnswersEveryLine) {
  for (const char* name : {"qwen2_tiny", "llama_tiny"}) {
    auto expected = nlohmann::json::parse(read_text(kFixtures / name / "expected.json"));
    const fs::path prompts = dir_ / "prompts.jsonl", out = dir_ / "replies.jsonl";
    nlohmann::json chat = {{"messages", expected["messages"]}};
    chat["messages"].push_back({{"role", "assistant"}, {"content", "the reference"}});
    write_text(prompts, R"({"prompt": "one two three", "completion": " four"})" "\n" + chat.dump() + "\n" +
                            R"({"text": "a b c d e f g"})" "\n\n" + R"({"messages": [{"role": "user", "content": "hi"}]})" "\n");
    auto r = run({"generate", "--model", (kFixtures / name).string(), "--prompts", prompts.string(), "--out",
                  out.string(), "--max-tokens", "20", "--ignore-eos", "--act", "f32", "--batch-size", "2"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("4 prompts"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out.string() + ".partial"));
    std::istringstream lines(read_text(out));
    std::vector<nlohmann::json> rows;
    for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0]["line"], 1);
    EXPECT_EQ(rows[0]["reference"], " four");
    EXPECT_EQ(rows[1]["reference"], "the reference");
    EXPECT_EQ(rows[1]["reply"], expected["greedy_text"].get<std::string>()) << name;
    EXPECT_EQ(rows[1]["new_tokens"], 20);
    EXPECT_EQ(rows[1]["stop"], "max tokens");
    EXPECT_FALSE(rows[2].contains("reference"));
    EXPECT_EQ(rows[3]["line"], 5) << "the blank line counted";
    // The one-prompt command's reply to the last line's message is the batched one.
    auto one = run({"generate", "--model", (kFixtures / name).string(), "--prompt", "hi", "--max-tokens", "20",
                    "--ignore-eos", "--act", "f32"});
    EXPECT_EQ(one.out, rows[3]["reply"].get<std::string>() + "\n");
  }
  // A bad line names the file and line; --compare-base without an adapter, --prompt with --prompts refused.
  write_text(dir_ / "bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": 3}\n");
  auto bad = run({"generate", "--model", (kFixtures / "qwen2_tiny").string(), "--prompts", (dir_ / "bad.jsonl").string()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("bad.jsonl:2"), std::string::npos) << bad.err;
  auto no_adapter = run({"generate", "--model", (kFixtures / "qwen2_tiny").string(), "--prompts",
                         (dir_ / "prompts.jsonl").string(), "--compare-base"});
  EXPECT_EQ(no_adapter.code, 1);
  EXPECT_NE(no_adapter.err.find("--compare-base needs --adapter"), std::string::npos) << no_adapter.err;
  auto both = run({"generate", "--model", (kFixtures / "qwen2_tiny").string(), "--prompts",
                   (dir_ / "prompts.jsonl").string(), "--prompt", "hi"});
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

TEST_F(Cli, TruncatedWeights) {
  auto s = read_text(dir_ / "model.safetensors");
  write_text(dir_ / "model.safetensors", s.substr(0, s.size() / 2));
  expect_one_line_error({"model.safetensors"});
}

TEST_F(Cli, HeaderLengthPastEndOfFile) {
  auto s = read_text(dir_ / "model.safetensors");
  uint64_t n = s.size() + 1000;
  std::memcpy(s.data(), &n, 8);
  write_text(dir_ / "model.safetensors", s);
  expect_one_line_error({"model.safetensors", "header"});
}

TEST_F(Cli, OverlappingOffsets) {
  const std::string header =
      R"({"model.norm.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
      R"("model.embed_tokens.weight":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  std::string s(8, '\0');
  uint64_t n = header.size();
  std::memcpy(s.data(), &n, 8);
  s += header + std::string(24, '\x01');
  write_text(dir_ / "model.safetensors", s);
  expect_one_line_error({"model.safetensors", "overlap"});
}

TEST_F(Cli, WrongShape) {
  rewrite_weights([](auto& tensors) {
    for (auto& t : tensors)
      if (t.name == "model.norm.weight") t.shape = {32}, t.bytes = t.bytes.first(32 * 4);
  });
  expect_one_line_error({"model.norm.weight", "shape"});
}

TEST_F(Cli, MissingTensor) {
  rewrite_weights([](auto& tensors) {
    std::erase_if(tensors, [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  });
  expect_one_line_error({"missing", "model.layers.1.mlp.up_proj.weight"});
}

TEST_F(Cli, UnknownArchitecture) {
  auto c = nlohmann::json::parse(read_text(dir_ / "config.json"));
  c["architectures"] = {"GPT2LMHeadModel"};
  c["model_type"] = "gpt2";
  write_text(dir_ / "config.json", c.dump());
  expect_one_line_error({"config.json", "GPT2LMHeadModel", "Qwen2ForCausalLM"});
}

TEST_F(Cli, MissingTokenizer) {
  fs::remove(dir_ / "tokenizer.json");
  expect_one_line_error({"tokenizer.json"});
}

TEST_F(Cli, MissingFolder) {
  fs::remove_all(dir_);
  expect_one_line_error({dir_.string()});
}

// The product's main job on the tiny model: --batch memorises two chat examples (the loss falls to near
// zero), writes a PEFT adapter, and `generate` with that adapter gives a training answer back.
TEST_F(Cli, BatchTrainsThenGenerateReproducesAnAnswer) {
  const fs::path run_dir = dir_ / "run", data = dir_ / "data.jsonl";
  write_text(data,
             R"({"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": "Paris."}]})"
             "\n"
             R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})"
             "\n");
  auto r = run({"--batch", "--model", dir_.string(), "--data", data.string(), "--out", run_dir.string(), "--steps", "25",
                "--lr", "1e-2", "--batch-size", "2", "--rank", "4", "--targets", "q_proj,v_proj,o_proj,up_proj,down_proj",
                "--store", (dir_ / "runs.sqlite").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("done after 25 steps"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(run_dir / "adapter" / "adapter_model.safetensors"));
  EXPECT_TRUE(fs::exists(run_dir / "adapter" / "adapter_config.json"));
  EXPECT_TRUE(fs::exists(run_dir / "config.json"));
  // The last logged loss is far below the first.
  auto csv = read_text(run_dir / "metrics.csv");
  std::vector<double> losses;  // column 3 of metrics.csv (step,time,loss,...)
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    size_t a = line.find(','), b = line.find(',', a + 1), e = line.find(',', b + 1);
    losses.push_back(std::stod(line.substr(b + 1, e - b - 1)));
  }
  ASSERT_EQ(losses.size(), 25u);
  EXPECT_LT(losses.back(), 0.1 * losses.front()) << "first " << losses.front() << ", last " << losses.back();
  auto g = run({"generate", "--model", dir_.string(), "--adapter", (run_dir / "adapter").string(), "--prompt",
                "What is the capital of France?", "--max-tokens", "10", "--act", "f32"});
  EXPECT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out, "Paris.\n") << g.err;
  EXPECT_NE(g.err.find("stop: eos"), std::string::npos) << g.err;
  // Start-up and the time to the first token, on stderr (stdout holds the reply alone).
  EXPECT_NE(g.err.find("[model loaded in "), std::string::npos) << g.err;
  EXPECT_NE(g.err.find("[first token after "), std::string::npos) << g.err;
}

// QLoRA: the same job on an NF4 base. The run records the option, and the adapter answers on the quantized
// base and, as an ordinary LoRA adapter, on the unquantized one.
TEST_F(Cli, BatchOnAnNf4BaseTrainsAnAdapterForTheUnquantizedBase) {
  const fs::path run_dir = dir_ / "run", data = dir_ / "data.jsonl";
  write_text(data,
             R"({"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": "Paris."}]})"
             "\n"
             R"({"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]})"
             "\n");
  auto r = run({"--batch", "--model", dir_.string(), "--data", data.string(), "--out", run_dir.string(), "--steps", "25",
                "--lr", "1e-2", "--batch-size", "2", "--rank", "4", "--targets", "q_proj,v_proj,o_proj,up_proj,down_proj",
                "--quantize", "nf4", "--store", (dir_ / "runs.sqlite").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("done after 25 steps"), std::string::npos) << r.err;
  EXPECT_NE(read_text(run_dir / "config.json").find("\"quantize\": \"nf4\""), std::string::npos);
  for (const char* quant : {"nf4", "none"}) {
    auto g = run({"generate", "--model", dir_.string(), "--adapter", (run_dir / "adapter").string(), "--prompt",
                  "What is the capital of France?", "--max-tokens", "10", "--act", "f32", "--quantize", quant});
    EXPECT_EQ(g.code, 0) << g.err;
    EXPECT_EQ(g.out, "Paris.\n") << "base " << quant << ": " << g.err;
  }
}

// The default --targets (q_proj,v_proj) is Phi-3's fused qkv_proj, as the app's ticks are; targets given are
// kept as given, and one the model lacks is refused naming the projections it has.
TEST_F(Cli, DefaultTargetsFitPhi3sFusedProjection) {
  const fs::path run_dir = dir_ / "phi3_run", data = dir_ / "data.jsonl";
  write_text(data, R"({"text": "The quick brown fox jumps over the lazy dog."})" "\n");
  const fs::path phi3 = kFixtures / "phi3_tiny";
  auto r = run({"--batch", "--model", phi3.string(), "--data", data.string(), "--out", run_dir.string(), "--steps", "1",
                "--rank", "2", "--store", (dir_ / "runs.sqlite").string(), "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto config = nlohmann::json::parse(read_text(run_dir / "adapter" / "adapter_config.json"));
  EXPECT_EQ(config["target_modules"], nlohmann::json::array({"qkv_proj"})) << config.dump();

  auto refused = run({"--batch", "--model", phi3.string(), "--data", data.string(), "--out", (dir_ / "r2").string(),
                      "--steps", "1", "--targets", "q_proj", "--store", (dir_ / "runs.sqlite").string(), "--quiet"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("\"q_proj\" is not a projection of Phi3ForCausalLM"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("qkv_proj, o_proj, gate_up_proj, down_proj"), std::string::npos) << refused.err;
}

TEST_F(Cli, UnknownQuantizationIsRefused) {
  auto r = run({"--batch", "--model", dir_.string(), "--data", (dir_ / "none.jsonl").string(), "--quantize", "nf5",
                "--store", (dir_ / "runs.sqlite").string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("--quantize: \"nf5\" is not nf4, q8 or none"), std::string::npos) << r.err;
  auto g = run({"generate", "--model", dir_.string(), "--prompt", "hi", "--quantize", "int4"});
  EXPECT_EQ(g.code, 1) << g.err;
  EXPECT_NE(g.err.find("--quantize"), std::string::npos) << g.err;
}

TEST_F(Cli, BatchNamesTheBadLine) {
  const fs::path data = dir_ / "bad.jsonl";
  write_text(data, "{\"text\": \"fine\"}\n{\"text\": 3}\n");
  auto r = run({"--batch", "--model", dir_.string(), "--data", data.string(), "--out", (dir_ / "run").string(), "--steps",
                "1", "--store", (dir_ / "runs.sqlite").string()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;
}

TEST_F(Cli, BadSamplingOption) {
  auto r = run({"generate", "--model", dir_.string(), "--prompt", "hi", "--top-p", "1.5"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("top_p"), std::string::npos) << r.err;
}

// export --merge: the merged folder generates what the base with the adapter generates, and the run store
// records the export under --run.
TEST_F(Cli, ExportMergeWritesAModelThatGeneratesLikeTheAdapter) {
  const fs::path out = dir_ / "merged", store = dir_ / "runs.sqlite";
  int64_t run_id = 0;
  {
    store::RunStore runs(store);
    run_id = runs.create_run({.name = "r", .model_path = dir_, .data_path = "d.jsonl", .config_json = "{}", .out_dir = dir_});
  }
  auto r = run({"export", "--merge", "--model", dir_.string(), "--adapter", (dir_ / "adapter").string(), "--out",
                out.string(), "--run", std::to_string(run_id), "--store", store.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("14 weights merged"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  {
    store::RunStore runs(store);
    auto exports = runs.exports(run_id);
    ASSERT_EQ(exports.size(), 1u);
    EXPECT_EQ(exports[0].format, store::ExportFormat::merged);
    EXPECT_EQ(exports[0].path, out);
  }
  const std::vector<std::string> prompt = {"--prompt", "What is the capital of France?", "--max-tokens", "12",
                                           "--ignore-eos", "--act", "f32"};
  auto with_adapter = prompt, merged = prompt;
  with_adapter.insert(with_adapter.begin(), {"generate", "--model", dir_.string(), "--adapter", (dir_ / "adapter").string()});
  merged.insert(merged.begin(), {"generate", "--model", out.string()});
  auto a = run(with_adapter), m = run(merged);
  EXPECT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(m.out, a.out);

  // The folder exists now: refused without --force, replaced with it; shards on request.
  auto again = run({"export", "--merge", "--model", dir_.string(), "--adapter", (dir_ / "adapter").string(), "--out",
                    out.string(), "--max-shard-size", "100KB"});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  again = run({"export", "--merge", "--model", dir_.string(), "--adapter", (dir_ / "adapter").string(), "--out",
               out.string(), "--max-shard-size", "100KB", "--force"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(fs::exists(out / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
}

// export --gguf: adapter.gguf, model-<type>.gguf and a Modelfile naming it, recorded under --run; an
// unknown --gguf-type and a full folder without --force are refused; a model GGUF cannot express leaves no folder. (llama.cpp reading these files is
// gguf_llamacpp_test.)
TEST_F(Cli, ExportGgufWritesModelAdapterAndModelfile) {
  const fs::path out = dir_ / "gguf", store = dir_ / "runs.sqlite";
  int64_t run_id = 0;
  {
    store::RunStore runs(store);
    run_id = runs.create_run({.name = "r", .model_path = dir_, .data_path = "d.jsonl", .config_json = "{}", .out_dir = dir_});
  }
  const std::vector<std::string> base = {"export", "--gguf", out.string(), "--model", dir_.string(), "--adapter",
                                         (dir_ / "adapter").string()};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  auto bad = with({"--gguf-type", "q4_0"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--gguf-type"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(out));

  auto r = with({"--gguf-type", "q8_0", "--run", std::to_string(run_id), "--store", store.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("100%"), std::string::npos) << r.err;
  const auto model = gguf::Reader::open(out / "model-q8_0.gguf");
  EXPECT_EQ(std::get<std::string>(*model.find("general.architecture")), "qwen2");
  EXPECT_EQ(std::get<uint32_t>(*model.find("general.file_type")), 7u);
  const auto adapter = gguf::Reader::open(out / "adapter.gguf");
  EXPECT_EQ(std::get<std::string>(*adapter.find("general.type")), "adapter");
  EXPECT_EQ(adapter.tensors().size(), 2u * 7u * 2u);
  const std::string modelfile = read_text(out / "Modelfile");
  EXPECT_NE(modelfile.find("\nFROM ./model-q8_0.gguf\n"), std::string::npos) << modelfile;
  {
    store::RunStore runs(store);
    auto exports = runs.exports(run_id);
    ASSERT_EQ(exports.size(), 1u);
    EXPECT_EQ(exports[0].format, store::ExportFormat::gguf);
  }
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_TRUE(e.path().filename() == "Modelfile" || e.path().extension() == ".gguf") << e.path();

  auto again = with({});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  again = with({"--force"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(fs::exists(out / "model-f16.gguf"));

  // A model GGUF cannot express (Qwen2's sliding window): refused, naming its config.json, and the folder the
  // export would have made (and its parent) is not left behind.
  const fs::path windowed = dir_ / "windowed";
  fs::create_directories(windowed);
  nlohmann::json config = nlohmann::json::parse(read_text(dir_ / "config.json"));
  config["use_sliding_window"] = true;
  config["sliding_window"] = 16;
  config["max_window_layers"] = 0;
  write_text(windowed / "config.json", config.dump());
  auto refused = run({"export", "--gguf", (dir_ / "refused" / "gguf").string(), "--model", windowed.string(),
                      "--adapter", (dir_ / "adapter").string()});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find((windowed / "config.json").string()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("sliding window"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir_ / "refused")) << "a refused export --gguf left a folder behind";
}

TEST_F(Cli, ExportWithoutMergeSaysWhatItCanDo) {
  auto r = run({"export", "--model", dir_.string(), "--adapter", (dir_ / "adapter").string(), "--out",
                (dir_ / "merged").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find("--merge"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "merged"));
  auto help = run({"export", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("transformers loads"), std::string::npos) << help.out;
}

TEST_F(Cli, ExportErrorsNameTheFile) {
  auto export_to = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"export", "--merge", "--model", dir_.string(), "--adapter",
                                     (dir_ / "adapter").string(), "--out", (dir_ / "merged").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run(args);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "merged"));
    return r.err;
  };
  std::string err = export_to({"--max-shard-size", "5XB"});
  EXPECT_NE(err.find("--max-shard-size"), std::string::npos) << err;
  err = export_to({"--run", "999", "--store", (dir_ / "runs.sqlite").string()});
  EXPECT_NE(err.find("no such run"), std::string::npos) << err;
  auto c = nlohmann::json::parse(read_text(dir_ / "adapter" / "adapter_config.json"));
  c["use_dora"] = true;
  write_text(dir_ / "adapter" / "adapter_config.json", c.dump());
  err = export_to({});
  EXPECT_NE(err.find("adapter_config.json"), std::string::npos) << err;
  EXPECT_NE(err.find("use_dora"), std::string::npos) << err;
}

}  // namespace
}  // namespace ls
