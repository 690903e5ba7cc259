// The HF tensor names and shapes each config implies, and check_weights on small model folders written with
// write_safetensors (single file and sharded): passes on an exact match, names every missing, misshapen and
// unexpected tensor otherwise, and lets the known harmless extras through.
#include "model/architecture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/model_files.h"
#include "tensor/dtype.h"

namespace ls::model {
namespace {

using nlohmann::json;
using test::TempDir;
using test::throws_error;

const ExpectedTensor* find(const std::vector<ExpectedTensor>& t, const std::string& name) {
  auto it = std::find_if(t.begin(), t.end(), [&](const ExpectedTensor& e) { return e.name == name; });
  return it == t.end() ? nullptr : &*it;
}

using Shape = std::vector<uint64_t>;

ModelConfig qwen25_05b() {
  return parse_config(json{{"architectures", {"Qwen2ForCausalLM"}},
                           {"hidden_size", 896},
                           {"intermediate_size", 4864},
                           {"num_hidden_layers", 24},
                           {"num_attention_heads", 14},
                           {"num_key_value_heads", 2},
                           {"vocab_size", 151936},
                           {"tie_word_embeddings", true}},
                      "config.json");
}

TEST(ExpectedTensors, Qwen25_05B) {
  const auto t = expected_tensors(qwen25_05b());
  EXPECT_EQ(t.size(), 1 + 24 * 12 + 1u);  // embed; per layer 2 norms, 4 + 3 bias attention, 3 mlp; final norm
  EXPECT_EQ(t.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(t.back().name, "model.norm.weight");
  EXPECT_EQ(find(t, "model.embed_tokens.weight")->shape, (Shape{151936, 896}));
  EXPECT_EQ(find(t, "model.layers.0.input_layernorm.weight")->shape, (Shape{896}));
  EXPECT_EQ(find(t, "model.layers.23.self_attn.q_proj.weight")->shape, (Shape{896, 896}));
  EXPECT_EQ(find(t, "model.layers.23.self_attn.q_proj.bias")->shape, (Shape{896}));
  EXPECT_EQ(find(t, "model.layers.5.self_attn.k_proj.weight")->shape, (Shape{128, 896}));
  EXPECT_EQ(find(t, "model.layers.5.self_attn.k_proj.bias")->shape, (Shape{128}));
  EXPECT_EQ(find(t, "model.layers.5.self_attn.v_proj.bias")->shape, (Shape{128}));
  EXPECT_EQ(find(t, "model.layers.5.self_attn.o_proj.weight")->shape, (Shape{896, 896}));
  EXPECT_EQ(find(t, "model.layers.5.self_attn.o_proj.bias"), nullptr);
  EXPECT_EQ(find(t, "model.layers.5.post_attention_layernorm.weight")->shape, (Shape{896}));
  EXPECT_EQ(find(t, "model.layers.5.mlp.gate_proj.weight")->shape, (Shape{4864, 896}));
  EXPECT_EQ(find(t, "model.layers.5.mlp.up_proj.weight")->shape, (Shape{4864, 896}));
  EXPECT_EQ(find(t, "model.layers.5.mlp.down_proj.weight")->shape, (Shape{896, 4864}));
  EXPECT_EQ(find(t, "model.layers.5.mlp.down_proj.bias"), nullptr);
  EXPECT_EQ(find(t, "model.layers.24.input_layernorm.weight"), nullptr);
  EXPECT_EQ(find(t, "lm_head.weight"), nullptr);  // tied
  uint64_t params = 0;
  for (const ExpectedTensor& e : t) {
    uint64_t n = 1;
    for (uint64_t d : e.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(params, 494032768u);  // Qwen2.5-0.5B's published parameter count
}

TEST(ExpectedTensors, LlamaMistralAndBiases) {
  json llama = {{"architectures", {"LlamaForCausalLM"}},
                {"hidden_size", 2048},
                {"intermediate_size", 8192},
                {"num_hidden_layers", 16},
                {"num_attention_heads", 32},
                {"num_key_value_heads", 8},
                {"head_dim", 64},
                {"vocab_size", 128256},
                {"tie_word_embeddings", true}};
  auto t = expected_tensors(parse_config(llama, "config.json"));
  EXPECT_EQ(t.size(), 1 + 16 * 9 + 1u);
  EXPECT_EQ(find(t, "model.layers.0.self_attn.k_proj.weight")->shape, (Shape{512, 2048}));
  EXPECT_EQ(find(t, "model.layers.0.self_attn.q_proj.bias"), nullptr);

  llama["attention_bias"] = true;
  llama["mlp_bias"] = true;
  llama["tie_word_embeddings"] = false;
  t = expected_tensors(parse_config(llama, "config.json"));
  EXPECT_EQ(t.size(), 1 + 16 * (9 + 4 + 3) + 1 + 1u);
  EXPECT_EQ(find(t, "model.layers.3.self_attn.o_proj.bias")->shape, (Shape{2048}));
  EXPECT_EQ(find(t, "model.layers.3.self_attn.v_proj.bias")->shape, (Shape{512}));
  EXPECT_EQ(find(t, "model.layers.3.mlp.up_proj.bias")->shape, (Shape{8192}));
  EXPECT_EQ(find(t, "model.layers.3.mlp.down_proj.bias")->shape, (Shape{2048}));
  EXPECT_EQ(find(t, "lm_head.weight")->shape, (Shape{128256, 2048}));
  EXPECT_EQ(t.back().name, "lm_head.weight");

  const json mistral = {{"architectures", {"MistralForCausalLM"}},
                        {"hidden_size", 4096},
                        {"intermediate_size", 14336},
                        {"num_hidden_layers", 32},
                        {"num_attention_heads", 32},
                        {"num_key_value_heads", 8},
                        {"vocab_size", 32000}};
  t = expected_tensors(parse_config(mistral, "config.json"));
  EXPECT_EQ(t.size(), 1 + 32 * 9 + 1 + 1u);
  EXPECT_EQ(find(t, "model.layers.31.self_attn.k_proj.weight")->shape, (Shape{1024, 4096}));
  EXPECT_EQ(find(t, "model.layers.31.self_attn.o_proj.weight")->shape, (Shape{4096, 4096}));
  EXPECT_EQ(find(t, "lm_head.weight")->shape, (Shape{32000, 4096}));
}

// ---------------------------------------------------------------------------------------------------------
// check_weights on tiny models: V 16, C 8, I 12, 2 layers, 2 heads of 4, 1 KV head.

json tiny_config(const char* arch, bool tied) {
  return {{"architectures", {arch}}, {"hidden_size", 8},           {"intermediate_size", 12},
          {"num_hidden_layers", 2},  {"num_attention_heads", 2},   {"num_key_value_heads", 1},
          {"vocab_size", 16},        {"tie_word_embeddings", tied}};
}

// Writes `tensors` (name, shape) into dir/model.safetensors as bf16, or f32 for norms (dtypes may mix).
class TinyModel {
 public:
  explicit TinyModel(const ModelConfig& c) {
    for (const ExpectedTensor& e : expected_tensors(c)) add(e.name, e.shape);
  }
  void add(const std::string& name, Shape shape) { tensors_[name] = std::move(shape); }
  void remove(const std::string& name) { tensors_.erase(name); }
  std::vector<TensorToWrite> to_write() {
    std::vector<TensorToWrite> out;
    data_.clear();
    data_.reserve(tensors_.size());
    for (const auto& [name, shape] : tensors_) {
      const DType dtype = name.find("norm") != std::string::npos ? DType::f32 : DType::bf16;
      uint64_t n = dtype_size(dtype);
      for (uint64_t d : shape) n *= d;
      data_.emplace_back(n);
      for (size_t i = 0; i < n; ++i) data_.back()[i] = std::byte(i * 7 + 1);
      out.push_back({name, dtype, shape, data_.back()});
    }
    return out;
  }
  SafeTensors write(const std::filesystem::path& file) {
    const auto t = to_write();
    write_safetensors(file, t);
    return SafeTensors::open(file);
  }

 private:
  std::map<std::string, Shape> tensors_;
  std::vector<std::vector<std::byte>> data_;
};

TEST(CheckWeights, ExactMatchPasses) {
  TempDir dir;
  for (const char* arch : {"Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"}) {
    for (bool tied : {false, true}) {
      const ModelConfig c = parse_config(tiny_config(arch, tied), "config.json");
      TinyModel m(c);
      EXPECT_NO_THROW(check_weights(c, m.write(dir / "model.safetensors"))) << arch << " tied " << tied;
    }
  }
}

TEST(CheckWeights, HarmlessExtras) {
  TempDir dir;
  const ModelConfig c = parse_config(tiny_config("Qwen2ForCausalLM", true), "config.json");
  TinyModel m(c);
  m.add("model.layers.0.self_attn.rotary_emb.inv_freq", {2});
  m.add("lm_head.weight", {16, 8});  // a tied checkpoint carrying the copy
  EXPECT_NO_THROW(check_weights(c, m.write(dir / "model.safetensors")));
  m.add("lm_head.weight", {16, 9});
  EXPECT_TRUE(
      throws_error([&] { check_weights(c, m.write(dir / "model.safetensors")); },
                   {"model.safetensors", "lm_head.weight (tied, ignored) has shape [16, 9], expected [16, 8]"}));
}

TEST(CheckWeights, NamesEachProblem) {
  TempDir dir;
  const ModelConfig c = parse_config(tiny_config("Qwen2ForCausalLM", false), "config.json");
  {
    TinyModel m(c);
    m.remove("model.layers.1.self_attn.k_proj.bias");
    EXPECT_TRUE(throws_error(
        [&] { check_weights(c, m.write(dir / "model.safetensors")); },
        {"model.safetensors", "Qwen2ForCausalLM", "(1 problem)", "missing model.layers.1.self_attn.k_proj.bias [4]"}));
  }
  {
    TinyModel m(c);
    m.remove("lm_head.weight");
    EXPECT_TRUE(throws_error([&] { check_weights(c, m.write(dir / "model.safetensors")); },
                             {"model.safetensors", "missing lm_head.weight [16, 8]"}));
  }
  {
    TinyModel m(c);
    m.add("model.layers.0.mlp.up_proj.weight", {8, 12});  // transposed
    m.add("model.layers.0.self_attn.o_proj.bias", {8});   // Qwen2 has no o bias
    EXPECT_TRUE(throws_error(
        [&] { check_weights(c, m.write(dir / "model.safetensors")); },
        {"model.safetensors", "(2 problems)", "model.layers.0.mlp.up_proj.weight has shape [8, 12], expected [12, 8]",
         "unexpected model.layers.0.self_attn.o_proj.bias [8]"}));
  }
  {  // a whole layer missing: 12 problems, 10 listed
    TinyModel m(c);
    for (const ExpectedTensor& e : expected_tensors(c))
      if (e.name.starts_with("model.layers.1.")) m.remove(e.name);
    EXPECT_TRUE(throws_error(
        [&] { check_weights(c, m.write(dir / "model.safetensors")); },
        {"model.safetensors", "(12 problems)", "missing model.layers.1.input_layernorm.weight", "; and 2 more"}));
  }
}

TEST(CheckWeights, ShardedModelFolder) {
  TempDir dir;
  const json config = tiny_config("LlamaForCausalLM", false);
  test::write_text(dir / "config.json", config.dump(2));
  const ModelConfig c = load_config(dir.path());
  TinyModel m(c);
  const std::vector<TensorToWrite> all = m.to_write();
  const std::vector<TensorToWrite> first(all.begin(), all.begin() + long(all.size() / 2)),
      second(all.begin() + long(all.size() / 2), all.end());
  write_safetensors(dir / "model-00001-of-00002.safetensors", first);
  write_safetensors(dir / "model-00002-of-00002.safetensors", second);
  json weight_map = json::object();
  for (const TensorToWrite& t : first) weight_map[t.name] = "model-00001-of-00002.safetensors";
  for (const TensorToWrite& t : second) weight_map[t.name] = "model-00002-of-00002.safetensors";
  test::write_text(dir / "model.safetensors.index.json",
                   json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump());
  const SafeTensors st = SafeTensors::open(dir.path());
  EXPECT_EQ(st.files().size(), 2u);
  EXPECT_NO_THROW(check_weights(c, st));
  EXPECT_EQ(st.at("model.norm.weight").dtype, DType::f32);
  EXPECT_EQ(st.at("model.embed_tokens.weight").dtype, DType::bf16);
}

}  // namespace
}  // namespace ls::model
