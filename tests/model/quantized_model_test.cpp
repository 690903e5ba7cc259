// A quantized base (QLoRA, --quantize nf4|q8) computes what the same model computes with its projection
// weights replaced by their dequantized values: for each fixture model (qwen2_tiny: q/k/v biases, tied
// embeddings; llama_tiny: untied, GQA 4/1) and random-weight Qwen3 and Phi-3 models (support/tiny_model.h;
// Phi-3's fused qkv_proj and gate_up_proj are quantized part by part, as model/weights.h keeps them) a copy
// of the folder is written with every layer projection weight w replaced by dequantize(quantize(w)) (in
// f32; in f16 with the biases where products run on tensor cores, see write_dequantized_copy), loaded as an
// ordinary model, and compared with the original loaded quantized:
// - the logits of every position of a prompt (the products on the dequantized scratch weight),
// - the logits of four single-token decode steps (the packed matrix-vector kernel, with and without an
//   adapter on every projection),
// - a training step's loss and every LoRA gradient (the backward's products through the scratch weight),
// all within 1e-5 relative where the products run in f32 (lavapipe); on tensor cores 3e-3, and 2e-2 for the
// decode steps (the packed product reads the unrounded weight, the reference its f16 rounding); and the
// quantized weights take less device memory.
#include <filesystem>

#include "infer/generator.h"
#include "model/architecture.h"
#include "model/peft_adapter.h"
#include "model/training.h"
#include "model/weights.h"
#include "support/random_adapter.h"
#include "support/testing.h"
#include "tensor/dtype.h"
#include "support/tiny_model.h"
#include "tensor/quant.h"
#include "model_files.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using model::LoraTarget;

// The model folder with every projection weight through quantize and dequantize. Where the products run
// on tensor cores, the projections' weights and biases are written in f16 (the values the quantized model
// computes with there, rounded to nearest even as its dequantization rounds them), so that both models run
// the same kernels on the same operands; in f32 elsewhere.
void write_dequantized_copy(const fs::path& src, const fs::path& dst, QuantType t, bool f16_projections) {
  for (const auto& f : fs::directory_iterator(src))
    if (f.is_regular_file() && f.path().extension() != ".safetensors") fs::copy_file(f.path(), dst / f.path().filename());
  const model::ModelConfig c = model::load_config(src / "config.json");
  const model::SafeTensors st = model::SafeTensors::open(src);
  std::vector<std::vector<float>> values;
  std::vector<std::vector<uint16_t>> halves;
  std::vector<model::TensorToWrite> out;
  const auto table = model::expected_tensors(c);
  values.reserve(table.size());
  halves.reserve(table.size());
  for (const model::ExpectedTensor& e : table) {
    const model::TensorInfo& info = st.at(e.name);
    std::vector<float> v(info.numel());
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(info.bytes.data(), info.dtype, i);
    if (e.role == model::TensorRole::weight) {
      const model::ModuleSpec m = model::layer_spec(c, e.layer).projection(e.target);
      if (m.parts.empty()) {
        v = dequantize(quantize(t, v));
      } else {  // each part on its own, as upload_weights quantizes them
        std::vector<float> parts;
        size_t row = 0;
        for (const model::FusedPart& part : m.parts) {
          const std::vector<float> rows(v.begin() + ptrdiff_t(row * e.shape[1]),
                                        v.begin() + ptrdiff_t((row + part.rows) * e.shape[1]));
          const std::vector<float> back = dequantize(quantize(t, rows));
          parts.insert(parts.end(), back.begin(), back.end());
          row += part.rows;
        }
        v = parts;
      }
    }
    const bool projection = e.role == model::TensorRole::weight || e.role == model::TensorRole::bias;
    if (projection && f16_projections) {
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
      halves.push_back(std::move(h));
      out.push_back({.name = e.name, .dtype = DType::f16, .shape = e.shape,
                     .bytes = std::as_bytes(std::span<const uint16_t>(halves.back()))});
      continue;
    }
    values.push_back(std::move(v));
    out.push_back({.name = e.name, .dtype = DType::f32, .shape = e.shape,
                   .bytes = std::as_bytes(std::span<const float>(values.back()))});
  }
  model::write_safetensors(dst / "model.safetensors", out);
}

struct Param {
  const char* model;
  QuantType quant;
};

// The models made here rather than read from tests/fixtures.
nlohmann::json generated_config(const std::string& name) {
  if (name == "qwen3_random")
    return nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "vocab_size": 301, "hidden_size": 128, "intermediate_size": 192,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
      "rope_theta": 1000000.0, "tie_word_embeddings": true})");
  nlohmann::json c = nlohmann::json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "vocab_size": 301, "hidden_size": 128, "intermediate_size": 192,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
      "original_max_position_embeddings": 16})");
  std::vector<double> s(16), l(16);
  for (int i = 0; i < 16; ++i) s[size_t(i)] = 1 + 0.1 * i, l[size_t(i)] = 2 + i;
  c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", s}, {"long_factor", l}};
  return c;
}

class QuantizedModel : public test::GpuTest, public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    const std::string name = GetParam().model;
    fs::path src = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name;
    if (name.ends_with("_random")) {
      src = made_.path();
      test::write_random_model(src, generated_config(name), 600);
    }
    write_dequantized_copy(src, dir_.path(), GetParam().quant, dev().coopmat());
    quantized_ = std::make_unique<model::Model>(model::Model::load(dev(), src, GetParam().quant));
    reference_ = std::make_unique<model::Model>(model::Model::load(dev(), dir_.path()));
    ids_ = test::random_ints(12, 3, 0, int32_t(quantized_->config.vocab_size) - 1);
  }
  double tol() { return dev().coopmat() ? 3e-3 : 1e-5; }
  // Decoding on tensor-core devices: the packed product reads the dequantized weights themselves, the
  // reference model their f16 rounding; through this random model's layers that moved logits by up to
  // 0.0054 (1.1e-3 of the largest) on the H100 (call s11b). A wrong scale or code moves them by their size.
  double decode_tol() { return dev().coopmat() ? 2e-2 : 1e-5; }
  std::string what(const char* part) { return std::string(GetParam().model) + " " + quant_name(GetParam().quant) + ": " + part; }

  test::TempDir made_, dir_;
  std::unique_ptr<model::Model> quantized_, reference_;
  std::vector<int32_t> ids_;
};

TEST_P(QuantizedModel, PrefillLogitsMatchTheDequantizedModel) {
  infer::Generator q(dev(), *quantized_, nullptr, {.context = 32});
  infer::Generator r(dev(), *reference_, nullptr, {.context = 32});
  test::expect_close(q.logits_of_every_position(ids_), r.logits_of_every_position(ids_), tol(), what("prefill logits"));
  EXPECT_LT(quantized_->weights.device_bytes(), reference_->weights.device_bytes());
  std::printf("  [measured] %s weights: %llu bytes quantized, %llu as f32\n", what("").c_str(),
              static_cast<unsigned long long>(quantized_->weights.device_bytes()),
              static_cast<unsigned long long>(reference_->weights.device_bytes()));
}

TEST_P(QuantizedModel, DecodeLogitsMatchWithAndWithoutAnAdapter) {
  const model::LoraAdapter adapter = test::random_adapter(dev(), quantized_->config, 4, 50);
  for (const model::LoraAdapter* a : {static_cast<const model::LoraAdapter*>(nullptr), &adapter}) {
    infer::Generator q(dev(), *quantized_, a, {.context = 32});
    infer::Generator r(dev(), *reference_, a, {.context = 32});
    q.prefill(std::span(ids_).first(8));
    r.prefill(std::span(ids_).first(8));
    for (size_t i = 8; i < ids_.size(); ++i) {
      q.decode(ids_[i]);
      r.decode(ids_[i]);
      test::expect_close(q.logits(), r.logits(), decode_tol(), what(a ? "decode logits with an adapter" : "decode logits"));
    }
  }
}

// Without an adapter the layer norms run inside the packed products (shaders/quant_matvec_norm.comp): q, k and v
// in one pass with the input norm, RoPE and the cache write (shaders/matvec_norm_qkv.comp on packed weights), or
// with q/k norms each product with the input norm; gate and up with the post-attention norm and the activation;
// with an adapter on every projection, the unfused path.
TEST_P(QuantizedModel, DecodeFoldsTheNormsIntoThePackedProducts) {
  const model::LoraAdapter adapter = test::random_adapter(dev(), quantized_->config, 4, 50);
  const std::string plain = std::string("qmatvec_norm_") + quant_name(GetParam().quant),
                    qkv = std::string("qmatvec_norm_qkv_") + quant_name(GetParam().quant);
  const bool qk_norm = model::model_spec(quantized_->config).layers.at(0).qk_norm;
  for (const model::LoraAdapter* a : {static_cast<const model::LoraAdapter*>(nullptr), &adapter}) {
    infer::Generator q(dev(), *quantized_, a, {.context = 32, .profile = true});
    q.decode(ids_[0]);
    size_t products = 0, passes = 0, gated = 0;
    for (const vk::Timing& t : q.timings(1)) {
      products += t.kernel.starts_with(plain);
      passes += t.kernel.starts_with(qkv);
      gated += t.kernel.starts_with("qmatvec_norm_silu") || t.kernel.starts_with("qmatvec_norm_gelu");
    }
    const size_t layers = quantized_->config.num_layers;
    EXPECT_EQ(products, a || !qk_norm ? 0 : 3 * layers) << what(a ? "with an adapter" : "no adapter");
    EXPECT_EQ(passes, a || qk_norm ? 0 : layers) << what(a ? "with an adapter" : "no adapter");
    EXPECT_EQ(gated, a ? 0 : layers) << what(a ? "with an adapter" : "no adapter");
  }
}

TEST_P(QuantizedModel, TrainingStepMatchesTheDequantizedModel) {
  const model::LoraAdapter adapter = test::random_adapter(dev(), quantized_->config, 2, 100);
  const uint32_t B = 2, T = 6;
  const auto ids = test::random_ints(B * T, 7, 0, int32_t(quantized_->config.vocab_size) - 1);
  std::vector<int32_t> targets(ids.size()), positions(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    targets[i] = i % T + 1 < T ? ids[i + 1] : -100;
    positions[i] = int32_t(i % T);
  }
  const model::TrainBatch batch{.B = B, .T = T, .ids = test::tensor_from_ints(dev(), {B * T}, ids),
                                .positions = test::tensor_from_ints(dev(), {B * T}, positions),
                                .targets = test::tensor_from_ints(dev(), {B * T}, targets)};
  auto run = [&](const model::Model& m) {
    auto grads = model::zero_grads_like(dev(), adapter);
    Tensor loss = Tensor::empty(dev(), {2}, DType::f32, "loss");
    vk::Recorder rec(dev());
    model::record_train_step(rec, m, adapter, grads, batch, loss, {});
    rec.finish().run();
    std::vector<std::vector<float>> out{download(loss)};
    for (const auto& layer : grads.layers)
      for (const auto& p : layer)
        if (p.defined()) out.push_back(download(p.a)), out.push_back(download(p.b));
    return out;
  };
  const auto q = run(*quantized_), r = run(*reference_);
  ASSERT_EQ(q.size(), r.size());
  EXPECT_GT(r[0][0], 0.0f);
  EXPECT_NEAR(q[0][0], r[0][0], tol() * r[0][0]) << what("loss");
  for (size_t i = 1; i < q.size(); ++i) test::expect_close(q[i], r[i], tol() * 10, what("LoRA gradient"));
}

INSTANTIATE_TEST_SUITE_P(Models, QuantizedModel,
                         ::testing::Values(Param{"qwen2_tiny", QuantType::nf4}, Param{"qwen2_tiny", QuantType::q8},
                                           Param{"llama_tiny", QuantType::nf4}, Param{"qwen3_random", QuantType::nf4},
                                           Param{"phi3_random", QuantType::nf4}, Param{"phi3_random", QuantType::q8}),
                         [](const auto& p) { return std::string(p.param.model) + "_" + quant_name(p.param.quant); });

}  // namespace
}  // namespace ls
