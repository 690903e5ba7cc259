// save_peft_adapter: round trips through load_peft_adapter bit for bit, rewrites PEFT's own fixture adapter
// byte for byte, writes adapter_config.json with keys PEFT 0.21 has (same JSON types), replaces files in an
// existing folder without touching others, leaves no temporary names, and refuses adapters that do not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "model/lora_init.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "support/testing.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::throws_error;

std::set<std::string> folder_names(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

class PeftSave : public test::GpuTest {
 protected:
  const fs::path model_dir = test::fixtures_dir() / "models/qwen2_tiny";
  ModelConfig config = load_config(model_dir);

  // A fresh adapter with B filled with random values too (B = 0 would hide a swapped or dropped B).
  LoraAdapter random_adapter(std::vector<LoraTarget> targets, uint32_t rank, float alpha, bool rslora, float dropout) {
    LoraAdapter a = init_lora(dev(), config, std::move(targets), rank, alpha, rslora, dropout, 77);
    uint32_t seed = 1;
    for (auto& layer : a.layers)
      for (auto& p : layer)
        if (p.defined()) upload(p.b, test::random_values(p.b.numel(), seed++));
    return a;
  }

  void expect_same(const LoraAdapter& got, const LoraAdapter& want) {
    EXPECT_EQ(got.rank, want.rank);
    EXPECT_EQ(got.alpha, want.alpha);
    EXPECT_EQ(got.rslora, want.rslora);
    EXPECT_EQ(got.dropout, want.dropout);
    EXPECT_EQ(std::set<LoraTarget>(got.targets.begin(), got.targets.end()),
              std::set<LoraTarget>(want.targets.begin(), want.targets.end()));
    ASSERT_EQ(got.layers.size(), want.layers.size());
    for (size_t layer = 0; layer < want.layers.size(); ++layer)
      for (size_t i = 0; i < kLoraTargetCount; ++i) {
        const LoraPair &g = got.layers[layer][i], &w = want.layers[layer][i];
        ASSERT_EQ(g.defined(), w.defined()) << "layer " << layer << " " << kLoraTargetNames[i];
        if (!w.defined()) continue;
        EXPECT_EQ(download_bytes(g.a), download_bytes(w.a)) << "A, layer " << layer << " " << kLoraTargetNames[i];
        EXPECT_EQ(download_bytes(g.b), download_bytes(w.b)) << "B, layer " << layer << " " << kLoraTargetNames[i];
      }
  }
};

TEST_F(PeftSave, RoundTripsBitExactlyIntoANewFolder) {
  TempDir tmp;
  const LoraAdapter a = random_adapter({LoraTarget::v_proj, LoraTarget::q_proj, LoraTarget::down_proj}, 4, 16.0f,
                                       true, 0.05f);
  const fs::path dir = tmp / "runs/one/adapter";  // parents missing too
  save_peft_adapter(a, config, dir, "Qwen/Qwen2.5-0.5B");
  EXPECT_EQ(folder_names(dir), (std::set<std::string>{"adapter_config.json", "adapter_model.safetensors"}));
  EXPECT_EQ(folder_names(tmp / "runs/one"), std::set<std::string>{"adapter"});  // no temporary folder left
  expect_same(load_peft_adapter(dev(), config, dir), a);

  const auto j = nlohmann::json::parse(test::read_text(dir / "adapter_config.json"));
  EXPECT_EQ(j["r"], 4);
  EXPECT_TRUE(j["lora_alpha"].is_number_integer());
  EXPECT_EQ(j["lora_alpha"], 16);
  EXPECT_EQ(j["lora_dropout"].get<double>(), 0.05);  // the decimal, not 0.05000000074505806
  EXPECT_EQ(j["use_rslora"], true);
  EXPECT_EQ(j["target_modules"], (nlohmann::json{"down_proj", "q_proj", "v_proj"}));
  EXPECT_EQ(j["base_model_name_or_path"], "Qwen/Qwen2.5-0.5B");
  EXPECT_TRUE(j["layers_to_transform"].is_null());
  // A trailing slash names the same folder.
  save_peft_adapter(a, config, tmp.path() / "two/", "");
  EXPECT_EQ(folder_names(tmp.path()), (std::set<std::string>{"runs", "two"}));
}

// PEFT's own adapter (tests/fixtures/models/qwen2_tiny/adapter, written by PEFT 0.21), loaded and saved
// again: the same safetensors bytes, and the same value for every config key we write.
TEST_F(PeftSave, RewritesPeftsFixtureAdapter) {
  TempDir tmp;
  const fs::path fixture = model_dir / "adapter";
  const LoraAdapter a = load_peft_adapter(dev(), config, fixture);
  save_peft_adapter(a, config, tmp / "again", "");
  EXPECT_EQ(test::read_text(tmp / "again/adapter_model.safetensors"), test::read_text(fixture / "adapter_model.safetensors"));
  const auto ours = nlohmann::json::parse(test::read_text(tmp / "again/adapter_config.json"));
  auto peft = nlohmann::json::parse(test::read_text(fixture / "adapter_config.json"));
  auto sorted = [](nlohmann::json list) {
    std::sort(list.begin(), list.end());
    return list;
  };
  peft["target_modules"] = sorted(peft["target_modules"]);  // a set in PEFT: its order is arbitrary
  for (const auto& [key, value] : ours.items()) {
    ASSERT_TRUE(peft.contains(key)) << key;
    EXPECT_EQ(value, peft[key]) << key;
  }
}

// Every key we write exists in PEFT 0.21's adapter_config.json with the same JSON type (integer, float,
// string, bool, list, object, null). base_model_name_or_path is null there (the fixture model was built
// from a config) and a string when we are given a name: PEFT writes either.
TEST_F(PeftSave, ConfigKeysAndTypesMatchPeft) {
  const auto peft = nlohmann::json::parse(test::read_text(model_dir / "adapter/adapter_config.json"));
  auto kind = [](const nlohmann::json& v) {
    return v.is_number_integer() ? std::string("integer") : v.is_number_float() ? std::string("float") : std::string(v.type_name());
  };
  for (const char* base : {"", "Qwen/Qwen2.5-0.5B"}) {
    const LoraAdapter a = random_adapter({LoraTarget::q_proj, LoraTarget::k_proj}, 2, 4.0f, false, 0.1f);
    const auto ours = nlohmann::json::parse(peft_config_json(a, config, base));
    for (const auto& [key, value] : ours.items()) {
      ASSERT_TRUE(peft.contains(key)) << "PEFT has no key \"" << key << "\"";
      if (key == "base_model_name_or_path" && value.is_string()) continue;
      EXPECT_EQ(kind(value), kind(peft[key])) << key << ": ours " << value << ", PEFT's " << peft[key];
    }
    EXPECT_EQ(ours.size(), 17u);
  }
  // A fractional alpha stays a float; the text is sorted, two-space indented, as PEFT's json.dumps.
  const LoraAdapter a = random_adapter({LoraTarget::o_proj}, 2, 12.5f, false, 0.0f);
  const std::string text = peft_config_json(a, config, "");
  EXPECT_EQ(text.rfind("{\n  \"alpha_pattern\": {},\n  \"base_model_name_or_path\": null,\n", 0), 0u) << text;
  EXPECT_NE(text.find("\"lora_alpha\": 12.5,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"lora_dropout\": 0.0,"), std::string::npos) << text;
}

TEST_F(PeftSave, ReplacesFilesInAnExistingFolder) {
  TempDir tmp;
  const fs::path dir = tmp / "checkpoint";
  fs::create_directories(dir);
  test::write_text(dir / "trainer_state.json", "{}");
  test::write_text(dir / "adapter_config.json", "old");
  const LoraAdapter first = random_adapter({LoraTarget::up_proj}, 4, 8.0f, false, 0.0f);
  save_peft_adapter(first, config, dir, "");
  const LoraAdapter second = random_adapter({LoraTarget::gate_proj, LoraTarget::k_proj}, 2, 4.0f, false, 0.0f);
  save_peft_adapter(second, config, dir, "");
  EXPECT_EQ(folder_names(dir),
            (std::set<std::string>{"adapter_config.json", "adapter_model.safetensors", "trainer_state.json"}));
  expect_same(load_peft_adapter(dev(), config, dir), second);
}

// PEFT's layers_to_transform: an adapter with its targets on some layers only.
TEST_F(PeftSave, SomeLayersOnly) {
  TempDir tmp;
  LoraAdapter a = random_adapter({LoraTarget::q_proj, LoraTarget::v_proj}, 4, 8.0f, false, 0.0f);
  a.layers[0] = {};
  save_peft_adapter(a, config, tmp / "a", "");
  const auto j = nlohmann::json::parse(test::read_text(tmp / "a/adapter_config.json"));
  EXPECT_EQ(j["layers_to_transform"], nlohmann::json::array({1}));
  expect_same(load_peft_adapter(dev(), config, tmp / "a"), a);
}

TEST_F(PeftSave, RefusesAdaptersThatDoNotFit) {
  TempDir tmp;
  const fs::path dir = tmp / "bad";
  LoraAdapter a = random_adapter({LoraTarget::q_proj, LoraTarget::v_proj}, 4, 8.0f, false, 0.0f);
  LoraAdapter partial = a;
  partial.layers[1][size_t(LoraTarget::v_proj)] = {};
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(partial, config, dir, ""); }, {"bad", "layer 1 has 1 of the adapter's 2"}));
  LoraAdapter short_one = a;
  short_one.layers.pop_back();
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(short_one, config, dir, ""); }, {"bad", "1 layers; the model has 2"}));
  LoraAdapter wrong_rank = a;
  wrong_rank.rank = 8;
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(wrong_rank, config, dir, ""); }, {"bad", "q_proj of layer 0", "[8, 64]"}));
  LoraAdapter stray = a;
  stray.layers[0][size_t(LoraTarget::o_proj)] = a.layers[0][size_t(LoraTarget::q_proj)];
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(stray, config, dir, ""); }, {"bad", "o_proj of layer 0", "not among"}));
  LoraAdapter none = a;
  for (auto& layer : none.layers) layer = {};
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(none, config, dir, ""); }, {"bad", "no LoRA matrices"}));
  EXPECT_FALSE(fs::exists(dir));  // nothing written by a refused save
  test::write_text(tmp / "file", "x");
  EXPECT_TRUE(throws_error([&] { save_peft_adapter(a, config, tmp / "file", ""); }, {"file", "not a folder"}));
  EXPECT_EQ(folder_names(tmp.path()), std::set<std::string>{"file"});
}

}  // namespace
}  // namespace ls::model
