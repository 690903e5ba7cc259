// What GGUF export refuses, and what a refused `export --gguf DIR` leaves on disk (model/gguf_folder.h):
// - a model llama.cpp's architecture cannot run as transformers does (a Qwen2 with use_sliding_window; a Gemma 3
//   with Llama 3 rope scaling, which llama.cpp's gemma3 cannot read) is refused by every export, naming its
//   config.json, and writes no file;
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
