// Tokenizer behaviour beyond the HF goldens: malformed tokenizer.json files give an ls::Error naming
// the file and the problem; streaming decode never splits a character; added tokens are matched in
// text; a rough throughput figure (printed, not asserted).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "error.h"
#include "tokenizer/tokenizer.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path qwen() { return fs::path(LS_SOURCE_DIR) / ".cache/tokenizers/qwen3"; }

// A small byte-level BPE file; `edit` replaces parts of it.
std::string tiny_json(const std::string& model_type = "BPE", const std::string& merges = R"(["a b"])",
                      const std::string& pre = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})") {
  return R"({"version": "1.0", "added_tokens": [{"id": 4, "content": "<eos>", "special": true}],
    "normalizer": null, "pre_tokenizer": )" + pre + R"(, "post_processor": null,
    "decoder": {"type": "ByteLevel"}, "model": {"type": ")" + model_type + R"(", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3},
    "merges": )" + merges + "}}";
}

std::string error_of(const std::string& json_text) {
  const auto path = fs::temp_directory_path() / "ls_tokenizer_test" / "tokenizer.json";
  fs::create_directories(path.parent_path());
  std::ofstream(path) << json_text;
  try {
    tok::Tokenizer::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerFile, MalformedFilesNameFileAndProblem) {
  EXPECT_TRUE(error_of(tiny_json()).empty()) << error_of(tiny_json());
  struct Case {
    std::string json, want;
  } cases[] = {
      {"{ not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"added_tokens": []})", "missing \"model\""},
      {tiny_json("WordPiece"), "WordPiece"},
      {tiny_json("BPE", R"(["a zzz"])"), "missing from the vocab"},
      {tiny_json("BPE", R"(["ab"])"), "not two tokens"},
      {tiny_json("BPE", R"([42])"), "merge 0"},
      {tiny_json("BPE", R"(["a b"])", R"({"type": "BertPreTokenizer"})"), "BertPreTokenizer"},
      {tiny_json("BPE", R"(["a b"])", R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})"),
       "does not compile"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.json);
    EXPECT_NE(e.find("tokenizer.json"), std::string::npos) << e;
    EXPECT_NE(e.find(c.want), std::string::npos) << "want \"" << c.want << "\" in: " << e;
  }
  try {
    tok::Tokenizer::load(fs::temp_directory_path() / "ls_no_such_dir_xyz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ls_no_such_dir_xyz"), std::string::npos) << e.what();
  }
  fs::remove_all(fs::temp_directory_path() / "ls_tokenizer_test");
}

TEST(TokenizerFile, TinyByteLevelEncodesAndDecodes) {
  const auto path = fs::temp_directory_path() / "ls_tokenizer_tiny" / "tokenizer.json";
  fs::create_directories(path.parent_path());
  std::ofstream(path) << tiny_json();
  auto t = tok::Tokenizer::load(path);
  EXPECT_EQ(t.encode("ab"), (std::vector<int32_t>{2}));
  EXPECT_EQ(t.encode("ab<eos>a"), (std::vector<int32_t>{2, 4, 0}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{2, 4, 0}), "ab<eos>a");
  EXPECT_EQ(t.decode(std::vector<int32_t>{2, 4, 0}, true), "aba");
  EXPECT_EQ(t.vocab_size(), 5u);
  fs::remove_all(path.parent_path());
}

TEST(Tokenizer, StreamingNeverSplitsCharacters) {
  auto t = tok::Tokenizer::load(qwen());
  const std::string text = "emoji 👨‍👩‍👧‍👦 and 中文 and é\u0301 done";
  auto ids = t.encode(text);
  tok::StreamDecoder stream(t);
  std::string out;
  for (int32_t id : ids) {
    std::string piece = stream.push(id);
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "a replacement character was streamed";
    out += piece;
  }
  out += stream.flush();
  EXPECT_EQ(out, t.decode(ids));
}

TEST(Tokenizer, AddedTokensMatchedInsideText) {
  auto t = tok::Tokenizer::load(qwen());
  auto ids = t.encode("x<|im_end|>y<think>");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], *t.token_id("<|im_end|>"));
  EXPECT_EQ(ids[3], *t.token_id("<think>"));
  EXPECT_TRUE(t.is_special(ids[1]));
  EXPECT_EQ(t.eos_id(), t.token_id("<|im_end|>"));
}

TEST(Tokenizer, Throughput) {
  auto t = tok::Tokenizer::load(qwen());
  std::string text;
  while (text.size() < (1u << 20))
    text += "def f(x):\n    return x * 2  # Les élèves étudient 东京 1234567 😀\n";
  auto t0 = std::chrono::steady_clock::now();
  auto ids = t.encode(text);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  [measured] encode: %.2f MB/s (%zu tokens)\n", double(text.size()) / s / 1e6, ids.size());
  EXPECT_EQ(t.decode(ids), text);
}

}  // namespace
}  // namespace ls
