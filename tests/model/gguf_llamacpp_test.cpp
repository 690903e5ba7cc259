// Our GGUF files read by llama.cpp itself (its CPU build, fetched by scripts/fetch_llamacpp.sh), for the
// tiny Qwen2, Llama, Qwen3, Gemma 3 and Phi-3 fixtures, and a random-weight Qwen3 (q/k norms, head_dim 24 !=
// hidden 80 / 4 heads; support/tiny_model.h) with qwen2_tiny's tokenizer, with a random LoRA (r 4, alpha 8,
// every projection: Phi-3's fused qkv_proj and gate_up_proj):
// - gemma3_tiny: norms as 1 + w, sliding layers 0 and 2 (window 8, over 24 positions), their own RoPE base, a
//   linear-scaled RoPE on the full layer, query_pre_attn_scalar 20 != head_dim 16 (carried by q_norm), final
//   logit softcapping;
// - gemma3_mm: the same as a Gemma3ForConditionalGeneration folder (language model under model.language_model.,
//   a vision tower tensor): its language model only;
// - phi3_tiny: longrope with original_max_position_embeddings 32: llama.cpp takes the long factors for any
//   context it makes (rounded up to 256 > 32), so the prompts are longer than 32 tokens, where our engine takes
//   them too; phi3_short: the same weights with original_max_position_embeddings 256 (max 1024), where both
//   take the short factors;
// - llama.cpp tokenizes a corpus (specials, digits, punctuation, newlines, non-ASCII) from our metadata to
//   the ids our tokenizer gives, and reads back the hyper-parameters and chat template;
// - the merged model in f16 (and bf16, within 5e-2): llama.cpp's logits at every position against ours (the merged safetensors run by
//   our generator in f32), within what f16 weights (and ggml's f16 activations in its matmuls) change;
//   greedy decoding gives the same tokens;
// - base f16 GGUF + our LoRA GGUF equals the merged f16 GGUF (logits), and differs from the base alone;
// - q8_0: llama.cpp's llama_model_quantize turns our f16 file into q8_0; tensor by tensor our q8_0 is at
//   least as close to the f32 weights as llama.cpp's (which quantized f16-rounded values), 0.5% slack.
// Tolerances are stated where asserted; measured values are printed as "[measured]".
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "infer/generator.h"
#include "model/config.h"
#include "model/gemma3_mm_folder.h"
#include "model/gguf_export.h"
#include "model/gguf_names.h"
#include "model/gguf_reader.h"
#include "model/merge.h"
#include "model/peft_adapter.h"
#include "model/model_files.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "support/testing.h"
#include "support/tiny_model.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"

#ifdef LS_LLAMACPP_LIB_DIR
#include "model/llamacpp_support.h"
#endif

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

#ifdef LS_LLAMACPP_LIB_DIR

const char* const kCorpus[] = {
    "Hello world! How are you today?",
    "The year 2024 had 366 days; 3.14159 is pi, 1,000,000 is a million.",
    "  leading spaces,\ttabs\tand\nnew\n\nlines  \n",
    "<|im_start|>user\nWhat's up?<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>",
    "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 emoji, I'm sure you'll see.",
    "def f(x):\n    return x ** 2  # squares\n",
};

class GgufLlamaCpp : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { test::init_llamacpp(); }
  void TearDown() override { test::expect_no_validation_messages(); }
};

// A Qwen3 made here: random weights and qwen2_tiny's tokenizer files (vocabulary 618).
// phi3_tiny with original_max_position_embeddings 256 and max_position_embeddings 1024: llama.cpp's context of
// 128 (256 once rounded up) then takes the short longrope factors, as our engine does below 256 positions.
fs::path make_phi3_short(const TempDir& dir) {
  const fs::path phi3 = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/phi3_tiny", out = dir / "phi3_short";
  fs::create_directories(out);
  for (const char* f : {"model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(phi3 / f, out / f);
  nlohmann::json config = nlohmann::json::parse(test::read_text(phi3 / "config.json"));
  config["original_max_position_embeddings"] = 256;
  config["rope_parameters"]["original_max_position_embeddings"] = 256;
  config["max_position_embeddings"] = 1024;
  test::write_text(out / "config.json", config.dump(2));
  return out;
}

// gemma3_tiny as a Gemma3ForConditionalGeneration folder (transformers 5's names: model.language_model., the
// text config nested, a vision tower tensor): the GGUF files hold its language model only.
fs::path make_gemma3_mm(const TempDir& dir) {
  test::write_gemma3_mm_folder(dir / "gemma3_mm", "model.language_model.");
  return dir / "gemma3_mm";
}

fs::path make_qwen3(const TempDir& dir) {
  const fs::path qwen2 = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny", out = dir / "qwen3";
  test::write_random_model(out, nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "vocab_size": 618, "hidden_size": 80, "intermediate_size": 136,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
      "max_position_embeddings": 256, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true,
      "bos_token_id": null, "eos_token_id": 617, "torch_dtype": "float32"})"), 4000);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(qwen2 / f, out / f);
  return out;
}

// Mistral (MistralForCausalLM: Llama's layer, its own config keys, a sliding window wider than the prompts) on the
// Llama fixture's tokenizer, irregular sizes: llama.cpp reads it as "llama".
fs::path make_mistral(const TempDir& dir) {
  const fs::path llama = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/llama_tiny", out = dir / "mistral";
  test::write_random_model(out, nlohmann::json::parse(R"({
      "architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": 620, "hidden_size": 96,
      "intermediate_size": 168, "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2,
      "head_dim": 16, "max_position_embeddings": 256, "rope_theta": 1000000.0, "rms_norm_eps": 1e-5,
      "sliding_window": 4096, "tie_word_embeddings": false, "bos_token_id": 615, "eos_token_id": 619,
      "torch_dtype": "float32"})"), 4000);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    if (fs::exists(llama / f)) fs::copy_file(llama / f, out / f);
  return out;
}

TEST_P(GgufLlamaCpp, LlamaCppReadsOurFiles) {
  TempDir dir;
  const std::string param = GetParam();
  const fs::path model_dir = param == "qwen3_random" ? make_qwen3(dir)
                             : param == "mistral_random" ? make_mistral(dir)
                             : param == "phi3_short" ? make_phi3_short(dir)
                             : param == "gemma3_mm"  ? make_gemma3_mm(dir)
                                                     : fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / param;
  // phi3_tiny: prompts past original_max_position_embeddings (32), see above.
  const bool long_prompts = param == "phi3_tiny";
  const ModelConfig config = load_config(model_dir);
  write_random_adapter(model_dir, dir / "adapter", 17);
  merge_adapter(model_dir, dir / "adapter", dir / "merged");
  uint64_t last_done = 0, last_total = 0;
  export_merged_gguf(model_dir, dir / "adapter", dir / "merged-f16.gguf", GgufFileType::f16,
                     [&](uint64_t done, uint64_t total) { last_done = done, last_total = total; });
  EXPECT_GT(last_total, 0u);
  EXPECT_EQ(last_done, last_total);
  export_model_gguf(model_dir, dir / "base-f16.gguf", GgufFileType::f16);
  export_adapter_gguf(model_dir, dir / "adapter", dir / "lora.gguf");
  export_merged_gguf(model_dir, dir / "adapter", dir / "merged-q8_0.gguf", GgufFileType::q8_0);
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << "left behind: " << e.path();

  LlamaModel merged(dir / "merged-f16.gguf");
  ASSERT_TRUE(merged.ok()) << "llama.cpp could not load " << dir / "merged-f16.gguf";

  // Metadata as llama.cpp reads it.
  char buf[256];
  ASSERT_GT(llama_model_meta_val_str(merged.model, "general.architecture", buf, sizeof buf), 0);
  EXPECT_EQ(std::string(buf), gguf_architecture(config.arch));
  EXPECT_EQ(llama_model_n_layer(merged.model), int32_t(config.num_layers));
  EXPECT_EQ(llama_model_n_embd(merged.model), int32_t(config.hidden_size));
  EXPECT_EQ(llama_model_n_head(merged.model), int32_t(config.num_heads));
  EXPECT_EQ(llama_model_n_head_kv(merged.model), int32_t(config.num_kv_heads));
  EXPECT_EQ(llama_model_n_ctx_train(merged.model), int32_t(config.max_position_embeddings));
  EXPECT_EQ(merged.n_vocab(), int32_t(config.vocab_size));
  const tok::Tokenizer ours = tok::Tokenizer::load(model_dir);
  const char* tmpl = llama_model_chat_template(merged.model, nullptr);
  ASSERT_NE(tmpl, nullptr);
  EXPECT_EQ(std::string(tmpl), ours.chat_template().value_or(""));
  if (ours.eos_id()) {
    EXPECT_EQ(llama_vocab_eos(merged.vocab()), *ours.eos_id());
  }
  if (ours.bos_id()) {
    EXPECT_EQ(llama_vocab_bos(merged.vocab()), *ours.bos_id());
  }

  // Tokenizer parity over the corpus.
  std::vector<int32_t> all_ids;
  for (const char* text : kCorpus) {
    const std::vector<int32_t> want = ours.encode(text);
    EXPECT_EQ(merged.tokenize(text), want) << "text: " << text;
    all_ids.insert(all_ids.end(), want.begin(), want.end());
  }

  // Logits of the merged f16 model against ours (f32 merged safetensors on our engine).
  std::vector<int32_t> ids = long_prompts ? all_ids : ours.encode(kCorpus[1]);
  ids.resize(std::min<size_t>(ids.size(), long_prompts ? 40 : 24));
  ASSERT_TRUE(!long_prompts || ids.size() == 40);
  const Model our_merged = Model::load(test::device(), dir / "merged");
  infer::Generator gen(test::device(), our_merged, nullptr, {.context = 128});
  const std::vector<float> want = gen.logits_of_every_position(ids);
  const std::vector<float> got = merged.logits_of_every_position(ids);
  ASSERT_EQ(got.size(), want.size());
  const auto s = test::compare(got, want);
  std::printf("  [measured] %s merged f16 GGUF (llama.cpp CPU) vs our f32 merged: max abs %.3e, rel %.3e over %zu "
              "logits\n", GetParam(), s.max_abs, s.max_rel, got.size());
  // f16 weights and ggml's f16 activations in f16 matmuls: a few 1e-3 of the logits' scale.
  EXPECT_LT(s.max_rel, 1e-2);

  // bf16 weights: the same logits within bf16's rounding (8 bits of mantissa against f16's 11).
  export_merged_gguf(model_dir, dir / "adapter", dir / "merged-bf16.gguf", GgufFileType::bf16);
  LlamaModel merged_bf16(dir / "merged-bf16.gguf");
  ASSERT_TRUE(merged_bf16.ok()) << "llama.cpp could not load " << dir / "merged-bf16.gguf";
  const auto sbf = test::compare(merged_bf16.logits_of_every_position(ids), want);
  std::printf("  [measured] %s merged bf16 GGUF vs our f32 merged: max abs %.3e, rel %.3e\n", GetParam(), sbf.max_abs,
              sbf.max_rel);
  // phi3_tiny's 40 positions (not 24) of random weights let bf16's rounding grow further: measured 5.7e-2.
  EXPECT_LT(sbf.max_rel, long_prompts ? 8e-2 : 5e-2);

  // Greedy decoding from the first tokens of the prompt.
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + (long_prompts ? 34 : 6));
  std::vector<int32_t> our_tokens;
  gen.reset();
  gen.prefill(prompt);
  for (int i = 0; i < 16; ++i) {
    const auto l = gen.logits();
    const int32_t best = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    our_tokens.push_back(best);
    gen.decode(best);
  }
  const std::vector<int32_t> their_tokens = merged.greedy(prompt, 16);
  size_t same = 0;
  while (same < std::min(their_tokens.size(), our_tokens.size()) && their_tokens[same] == our_tokens[same]) ++same;
  std::printf("  [measured] %s greedy after a %zu-token prompt: the first %zu of %zu tokens equal\n", GetParam(),
              prompt.size(), same, our_tokens.size());
  EXPECT_EQ(their_tokens, our_tokens);

  // Base + LoRA GGUF == merged GGUF.
  LlamaModel base(dir / "base-f16.gguf");
  LlamaModel with_lora(dir / "base-f16.gguf", dir / "lora.gguf");
  ASSERT_TRUE(base.ok() && with_lora.ok());
  ASSERT_NE(with_lora.lora, nullptr) << "llama.cpp refused " << dir / "lora.gguf";
  const std::vector<float> lora_logits = with_lora.logits_of_every_position(ids);
  const auto sl = test::compare(lora_logits, got);
  const auto sb = test::compare(base.logits_of_every_position(ids), got);
  std::printf("  [measured] %s base+LoRA GGUF vs merged GGUF: max abs %.3e (rel %.3e); base alone: %.3e\n",
              GetParam(), sl.max_abs, sl.max_rel, sb.max_abs);
  EXPECT_LT(sl.max_rel, 1e-2);
  EXPECT_GT(sb.max_abs, 20 * sl.max_abs) << "the adapter changes too little to tell";
  const auto so = test::compare(lora_logits, want);
  std::printf("  [measured] %s base+LoRA GGUF vs our f32 merged: max abs %.3e (rel %.3e)\n", GetParam(), so.max_abs,
              so.max_rel);
  EXPECT_LT(so.max_rel, 1e-2);

  // q8_0 against llama.cpp's own quantizer run on our f16 file.
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
  qp.nthread = 2;
  ASSERT_EQ(llama_model_quantize((dir / "merged-f16.gguf").c_str(), (dir / "llama-q8_0.gguf").c_str(), &qp), 0u);
  const auto our_q8 = gguf::Reader::open(dir / "merged-q8_0.gguf");
  const auto their_q8 = gguf::Reader::open(dir / "llama-q8_0.gguf");
  // The f32 merged weights in GGUF's names and row order: the truth both quantizers approximate.
  std::map<std::string, std::vector<float>> truth = gguf_order_matrices(dir / "merged");
  ASSERT_EQ(our_q8.tensors().size(), their_q8.tensors().size());
  for (const auto& theirs : their_q8.tensors()) {
    const auto* mine = our_q8.tensor(theirs.name);
    ASSERT_NE(mine, nullptr) << theirs.name;
    EXPECT_EQ(mine->type, theirs.type) << theirs.name;
    EXPECT_EQ(mine->ne, theirs.ne) << theirs.name;
    if (theirs.type != uint32_t(gguf::TensorType::q8_0)) continue;
    ASSERT_TRUE(truth.count(theirs.name)) << theirs.name;
    const std::vector<float> a = ggml_dequantize(*mine), b = ggml_dequantize(theirs), &h = truth[theirs.name];
    ASSERT_EQ(a.size(), h.size()) << theirs.name;
    double err_a = 0, err_b = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err_a += (a[i] - h[i]) * double(a[i] - h[i]);
      err_b += (b[i] - h[i]) * double(b[i] - h[i]);
      diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    }
    // Ours quantizes the f32 weights, llama.cpp their f16 rounding: ours must be as close to the f32 weights
    // (sum of squared errors, 0.5% slack for blocks where rounding falls the other way).
    EXPECT_LE(err_a, err_b * 1.005) << theirs.name;
    std::printf("  [measured] %s %s q8_0: rms err ours %.3e, llama.cpp %.3e (vs f32 weights); max |ours - theirs| "
                "%.3e\n", GetParam(), theirs.name.c_str(), std::sqrt(err_a / double(a.size())),
                std::sqrt(err_b / double(b.size())), diff);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufLlamaCpp,
                         ::testing::Values("qwen2_tiny", "llama_tiny", "qwen3_tiny", "qwen3_random", "mistral_random",
                                           "gemma3_tiny", "gemma3_mm", "phi3_tiny", "phi3_short"),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

#else

TEST(GgufLlamaCpp, LlamaCppReadsOurFiles) {
  GTEST_SKIP() << "llama.cpp is not in .cache/llamacpp (scripts/fetch_llamacpp.sh could not fetch it from npm; "
                  "run it, then re-run cmake)";
}

#endif

}  // namespace
}  // namespace ls::model
