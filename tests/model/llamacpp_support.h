#pragma once
// What the tests that read our GGUF files with llama.cpp itself share (gguf_llamacpp_test, gguf_llamacpp_quant_test,
// gguf_llamacpp_vocab_test): llama.cpp's CPU build (fetched by scripts/fetch_llamacpp.sh) set up once, a model
// loaded with a context for logits and greedy decoding, a random PEFT adapter, the f32 weights of a merged
// model in GGUF's names and row order, and a GGUF tensor dequantized by ggml itself.
// Only included where LS_LLAMACPP_LIB_DIR is defined (tests/CMakeLists.txt links llama.cpp there).
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>
#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/gguf_names.h"
#include "model/gguf_reader.h"
#include "model/layer_spec.h"
#include "model/lora.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "tensor/dtype.h"

namespace ls::test {

// llama.cpp's backends from the fetched libraries; its log only for warnings and errors.
inline void init_llamacpp() {
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
  }, nullptr);
  ggml_backend_load_all_from_path(LS_LLAMACPP_LIB_DIR);
  llama_backend_init();
}

}  // namespace ls::test

namespace ls::model {

namespace fs = std::filesystem;

// Writes a PEFT adapter for the model in `model_dir`: random A and B (normal, `stddev`), r 4, alpha 8, every
// projection the model has (seven; Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj).
inline void write_random_adapter(const fs::path& model_dir, const fs::path& dir, uint32_t seed, float stddev = 0.15f) {
  ModelConfig c = load_config(model_dir);
  {  // a Gemma3ForConditionalGeneration folder: PEFT's keys under its language model's prefix
    const SafeTensors st = SafeTensors::open(model_dir);
    resolve_weight_names(c, [&](const std::string& n) { return st.find(n) != nullptr; });
  }
  fs::create_directories(dir);
  std::string modules;
  for (size_t t = 0; t < kLoraTargetCount; ++t)
    if (layer_spec(c, 0).has_projection(LoraTarget(t)))
      modules += std::string(modules.empty() ? "" : ", ") + "\"" + std::string(target_name(LoraTarget(t))) + "\"";
  test::write_text(dir / "adapter_config.json",
                   R"({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 4, "lora_alpha": 8, "lora_dropout": 0.0,
    "target_modules": [)" + modules + R"(], "bias": "none", "use_rslora": false, "use_dora": false,
    "fan_in_fan_out": false})");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, stddev);
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  std::vector<std::vector<uint64_t>> shapes;
  for (uint32_t layer = 0; layer < c.num_layers; ++layer)
    for (size_t t = 0; t < kLoraTargetCount; ++t) {
      if (!layer_spec(c, 0).has_projection(LoraTarget(t))) continue;  // the fused ones of Phi-3
      const auto [out, in] = target_shape(c, LoraTarget(t));
      for (bool b : {false, true}) {
        names.push_back(peft_key(layer, LoraTarget(t), b, c.weight_prefix));
        shapes.push_back(b ? std::vector<uint64_t>{out, 4u} : std::vector<uint64_t>{4u, in});
        std::vector<float> v(shapes.back()[0] * shapes.back()[1]);
        for (float& x : v) x = normal(rng);
        values.push_back(std::move(v));
      }
    }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < names.size(); ++i)
    tensors.push_back({.name = names[i], .dtype = DType::f32, .shape = shapes[i],
                       .bytes = std::as_bytes(std::span<const float>(values[i]))});
  write_safetensors(dir / "adapter_model.safetensors", tensors, {{"format", "pt"}});
}

struct LlamaModel {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  llama_adapter_lora* lora = nullptr;
  explicit LlamaModel(const fs::path& gguf, const fs::path& lora_path = {}) {
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.progress_callback = [](float, void*) { return true; };  // no dots on stderr
    model = llama_model_load_from_file(gguf.c_str(), mp);
    if (!model) return;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 128;
    cp.n_ubatch = 128;
    cp.n_threads = cp.n_threads_batch = 2;
    ctx = llama_init_from_model(model, cp);
    if (!lora_path.empty() && ctx) {
      lora = llama_adapter_lora_init(model, lora_path.c_str());
      float scale = 1.0f;
      if (lora) llama_set_adapters_lora(ctx, &lora, 1, &scale);
    }
  }
  ~LlamaModel() {
    if (lora) llama_adapter_lora_free(lora);
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
  }
  bool ok() const { return model && ctx; }
  const llama_vocab* vocab() const { return llama_model_get_vocab(model); }
  int32_t n_vocab() const { return llama_vocab_n_tokens(vocab()); }

  std::vector<int32_t> tokenize(const std::string& text) const {
    std::vector<llama_token> ids(text.size() + 8);
    int32_t n = llama_tokenize(vocab(), text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()),
                               /*add_special=*/false, /*parse_special=*/true);
    ids.resize(size_t(std::max(n, 0)));
    return {ids.begin(), ids.end()};
  }
  // Logits after every token of `ids` (a fresh sequence), [T, V].
  std::vector<float> logits_of_every_position(const std::vector<int32_t>& ids) {
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_batch batch = llama_batch_init(int32_t(ids.size()), 0, 1);
    for (size_t i = 0; i < ids.size(); ++i) {
      batch.token[i] = ids[i];
      batch.pos[i] = int32_t(i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = int32_t(ids.size());
    const int rc = llama_decode(ctx, batch);
    std::vector<float> out;
    if (rc == 0)
      for (size_t i = 0; i < ids.size(); ++i) {
        const float* l = llama_get_logits_ith(ctx, int32_t(i));
        out.insert(out.end(), l, l + n_vocab());
      }
    llama_batch_free(batch);
    return out;
  }
  std::vector<int32_t> greedy(std::vector<int32_t> ids, int n) {
    llama_memory_clear(llama_get_memory(ctx), true);
    std::vector<int32_t> out;
    std::vector<llama_token> next(ids.begin(), ids.end());
    for (int i = 0; i < n; ++i) {
      if (llama_decode(ctx, llama_batch_get_one(next.data(), int32_t(next.size()))) != 0) break;
      const float* l = llama_get_logits_ith(ctx, -1);
      const int32_t best = int32_t(std::max_element(l, l + n_vocab()) - l);
      out.push_back(best);
      next = {best};
    }
    return out;
  }
};

// The f32 matrices of a model folder (f32 safetensors) in GGUF's names and row order (q/k rows permuted
// for "llama"): the values every GGUF file type approximates.
inline std::map<std::string, std::vector<float>> gguf_order_matrices(const fs::path& model_dir) {
  ModelConfig config = load_config(model_dir);
  const SafeTensors st = SafeTensors::open(model_dir);
  resolve_weight_names(config, [&](const std::string& n) { return st.find(n) != nullptr; });
  std::map<std::string, std::vector<float>> out;
  for (const auto& t : st.tensors()) {
    const auto name = gguf_tensor_name(config, t.name);
    if (!name || t.shape.size() != 2) continue;
    EXPECT_EQ(t.dtype, DType::f32) << t.name;
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const uint32_t heads = gguf_permuted_heads(config, t.name);
    std::vector<float>& v = out[*name];
    for (uint64_t r = 0; r < rows; ++r) {
      const auto* src = reinterpret_cast<const float*>(t.bytes.data()) + gguf_source_row(r, rows, heads) * cols;
      v.insert(v.end(), src, src + cols);
    }
  }
  return out;
}

inline uint64_t element_count(const gguf::TensorInfo& t) {
  uint64_t n = 1;
  for (uint64_t d : t.ne) n *= d;
  return n;
}

// A GGUF tensor's values as ggml's own to_float gives them (f32 copied).
inline std::vector<float> ggml_dequantize(const gguf::TensorInfo& t) {
  std::vector<float> v(element_count(t));
  if (t.type == uint32_t(gguf::TensorType::f32)) {
    std::memcpy(v.data(), t.bytes.data(), v.size() * 4);
    return v;
  }
  const ggml_type_traits* traits = ggml_get_type_traits(ggml_type(t.type));
  EXPECT_NE(traits->to_float, nullptr) << t.name;
  if (traits->to_float) traits->to_float(t.bytes.data(), v.data(), int64_t(v.size()));
  return v;
}

}  // namespace ls::model
