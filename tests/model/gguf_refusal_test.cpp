// What GGUF export refuses, and what a refused `export --gguf DIR` leaves on disk (model/gguf_folder.h):
// - a model llama.cpp's architecture cannot run as transformers does (a Qwen2 with use_sliding_window; a Gemma 3
//   with Llama 3 rope scaling, which llama.cpp's gemma3 cannot read) is refused by every export, naming its
//   config.json, and writes no file;
// - a tokenizer.json whose token ids are not whole numbers (1e48, 2.5, "7"), or whose added tokens are not tokens,
//   is refused naming the file, each value checked before any conversion (util/json_keys.h), and writes no file;
// - export_gguf_folder into a folder that does not exist (nor its parent): refused, and neither folder remains;
// - into an existing empty folder: refused, and the folder is still there, empty.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/gguf_export.h"
#include "model/gguf_folder.h"
#include "model/model_files.h"
#include "support/testing.h"
#include "support/tiny_model.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

nlohmann::json qwen2_windowed() {
  return nlohmann::json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 64, "hidden_size": 32,
      "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
      "max_position_embeddings": 64, "use_sliding_window": true, "sliding_window": 16, "max_window_layers": 0,
      "tie_word_embeddings": true, "torch_dtype": "float32"})");
}

nlohmann::json gemma3_llama3_rope() {
  return nlohmann::json::parse(R"({"architectures": ["Gemma3ForCausalLM"], "vocab_size": 64, "hidden_size": 32,
      "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
      "head_dim": 16, "max_position_embeddings": 64, "sliding_window": 8, "layer_types": ["sliding_attention",
      "full_attention"], "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}, "tie_word_embeddings": true,
      "torch_dtype": "float32"})");
}

TEST(GgufRefusal, InexpressibleModelsAreRefusedNamingTheConfig) {
  for (const auto& [config, what] : {std::pair{qwen2_windowed(), "sliding window"},
                                     std::pair{gemma3_llama3_rope(), "Llama 3 rope scaling"}}) {
    TempDir dir;
    test::write_random_model(dir / "model", config, 5);
    const std::string config_path = (dir / "model" / "config.json").string();
    EXPECT_TRUE(test::throws_error(
        [&] { export_model_gguf(dir / "model", dir / "m.gguf", GgufFileType::f16); }, {config_path, what}));
    EXPECT_TRUE(test::throws_error(
        [&] { export_merged_gguf(dir / "model", dir / "adapter", dir / "m.gguf", GgufFileType::q8_0); },
        {config_path, what}));
    EXPECT_TRUE(test::throws_error([&] { export_adapter_gguf(dir / "model", dir / "adapter", dir / "a.gguf"); },
                                   {config_path, what}));
    EXPECT_FALSE(fs::exists(dir / "m.gguf"));
    EXPECT_FALSE(fs::exists(dir / "a.gguf"));
  }
}

TEST(GgufRefusal, MalformedTokenIdsAreRefusedNamingTheTokenizer) {
  const fs::path fixture = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";
  const nlohmann::json tokenizer = nlohmann::json::parse(test::read_text(fixture / "tokenizer.json"));
  TempDir dir;
  test::write_random_model(dir / "model", nlohmann::json::parse(test::read_text(fixture / "config.json")), 5);
  fs::copy_file(fixture / "tokenizer_config.json", dir / "model" / "tokenizer_config.json");
  const std::string tok_path = (dir / "model" / "tokenizer.json").string();
  const std::string first = tokenizer["model"]["vocab"].begin().key();
  auto edited = [&](auto edit) {
    nlohmann::json t = tokenizer;
    edit(t);
    return t;
  };
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {edited([&](auto& t) { t["model"]["vocab"][first] = 1e48; }), "has the id 1e+48, not a whole number"},
      {edited([&](auto& t) { t["model"]["vocab"][first] = "7"; }), "has the id \"7\", not a whole number"},
      {edited([&](auto& t) { t["added_tokens"][0]["id"] = 2.5; }), "\"<|endoftext|>\" has the id 2.5"},
      {edited([&](auto& t) { t["added_tokens"][0]["id"] = -1e300; }), "has the id -1e+300"},
      {edited([&](auto& t) { t["added_tokens"][0]["id"] = 618; }), "has id 618, outside config.json's vocab_size 618"},
      {edited([&](auto& t) { t["added_tokens"][1] = 5; }), "\"added_tokens\" holds 5, not a token"},
      {edited([&](auto& t) { t["added_tokens"][1].erase("id"); }), "not a token with a \"content\" text and an \"id\""},
      {edited([&](auto& t) { t["added_tokens"] = {{"a", 1}}; }), "\"added_tokens\" must be a list"},
      {edited([&](auto& t) { t["model"]["type"] = 3; }), "a value of the wrong kind"},
  };
  for (const auto& [t, what] : cases) {
    test::write_text(dir / "model" / "tokenizer.json", t.dump());
    EXPECT_TRUE(test::throws_error([&] { export_model_gguf(dir / "model", dir / "m.gguf", GgufFileType::f16); },
                                   {tok_path, what}))
        << what;
    EXPECT_FALSE(fs::exists(dir / "m.gguf"));
  }
  test::write_text(dir / "model" / "tokenizer.json", tokenizer.dump());  // and the file as it was exports
  export_model_gguf(dir / "model", dir / "m.gguf", GgufFileType::f16);
  EXPECT_TRUE(fs::exists(dir / "m.gguf"));
}

TEST(GgufRefusal, ARefusedFolderExportLeavesNoFolderBehind) {
  TempDir dir;
  test::write_random_model(dir / "model", qwen2_windowed(), 5);
  EXPECT_TRUE(test::throws_error(
      [&] { export_gguf_folder(dir / "model", dir / "adapter", dir / "new" / "gguf", GgufFileType::f16); },
      {"sliding window"}));
  EXPECT_FALSE(fs::exists(dir / "new")) << "a refused export left the folder it created";

  fs::create_directories(dir / "empty");
  EXPECT_TRUE(test::throws_error(
      [&] { export_gguf_folder(dir / "model", dir / "adapter", dir / "empty", GgufFileType::q4_k_m); },
      {"sliding window"}));
  ASSERT_TRUE(fs::is_directory(dir / "empty")) << "a folder that was there must stay";
  EXPECT_TRUE(fs::is_empty(dir / "empty"));
}

}  // namespace
}  // namespace ls::model
