// Tokenizer behaviour beyond the golden ids: round trips, the stream decoder, added-token matching
// rules, Metaspace, tokenizer_config.json, every malformed-file error, threads, and a throughput print.
#include <gtest/gtest.h>
#include <unistd.h>
#include <utf8proc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace ls {
namespace {

using nlohmann::json;
using tok::StreamDecoder;
using tok::Tokenizer;

std::vector<std::string> fixture_strings() {
  return test::read_json(test::source_dir() / "tests/fixtures/tokenizer_strings.json")["strings"]
      .get<std::vector<std::string>>();
}

std::string nfc(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &out,
                        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string r(reinterpret_cast<char*>(out), size_t(n));
  std::free(out);
  return r;
}

// Random valid UTF-8: ASCII words and punctuation, whitespace runs, Latin with combining marks,
// CJK, Arabic, emoji with modifiers and joiners, and anything up to U+10FFFF (no surrogates).
std::string random_text(std::mt19937& rng, size_t chars) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {' ', '/'}, {'\t', '\r'}, {' ', ' '}, {0xC0, 0x24F}, {0x300, 0x36F},
      {0x4E00, 0x4FFF}, {0x600, 0x6FF}, {0x900, 0x97F}, {0x1F300, 0x1F6FF}, {0x1F3FB, 0x1F3FF}, {0x200D, 0x200D},
      {0xFE0F, 0xFE0F}, {0x85, 0x85}, {0x2000, 0x206F}, {0x10000, 0x10FFFF}};
  std::string s;
  for (size_t i = 0; i < chars; ++i) {
    auto [lo, hi] = ranges[rng() % ranges.size()];
    char32_t c = lo + char32_t(rng() % (hi - lo + 1));
    tok::append_utf8(s, c);
  }
  return s;
}

bool valid_utf8(const std::string& s) { return tok::find_invalid_utf8(s) == std::string::npos; }

// --- round trips --------------------------------------------------------------------------------

TEST(TokenizerRoundTrip, ByteLevelGivesBackAnyText) {
  // Qwen normalizes to NFC first, so it gives back NFC(s); Llama 3 has no normalizer: s itself.
  std::vector<std::string> texts = fixture_strings();
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) texts.push_back(random_text(rng, 1 + rng() % 40));
  for (std::string name : {"qwen3", "llama3"}) {
    const Tokenizer* t = test::real_tokenizer(name);
    ASSERT_NE(t, nullptr);
    for (const std::string& s : texts) {
      std::string want = name == "qwen3" ? nfc(s) : s;
      ASSERT_EQ(test::escaped(t->decode(t->encode(s))), test::escaped(want)) << name;
    }
  }
}

TEST(TokenizerRoundTrip, SentencePieceGivesBackTextWithoutAddedTokens) {
  // Llama 2 prepends "▁" to the text between added tokens and its decoder strips one leading space,
  // so texts with <s>, </s> or <unk> do not come back unchanged; nor does "▁" itself (a space).
  const Tokenizer* t = test::real_tokenizer("llama2");
  ASSERT_NE(t, nullptr);
  std::vector<std::string> texts = fixture_strings();
  std::mt19937 rng(11);
  for (int i = 0; i < 1000; ++i) texts.push_back(random_text(rng, 1 + rng() % 40));
  for (const std::string& s : texts) {
    if (s.find("<s>") != std::string::npos || s.find("</s>") != std::string::npos ||
        s.find("<unk>") != std::string::npos || s.find("\u2581") != std::string::npos) {
      continue;
    }
    ASSERT_EQ(test::escaped(t->decode(t->encode(s))), test::escaped(s));
  }
}

// --- stream decoder -----------------------------------------------------------------------------

std::string stream(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip, std::vector<std::string>* pieces) {
  StreamDecoder d(t, skip);
  std::string all;
  for (int32_t id : ids) {
    std::string p = d.push(id);
    if (pieces) pieces->push_back(p);
    all += p;
  }
  std::string tail = d.flush();
  if (pieces) pieces->push_back(tail);
  return all + tail;
}

TEST(StreamDecoder, EmojiSplitAcrossTokensComeOutWhole) {
  const std::string text = "Hi 👨‍👩‍👧‍👦 and 🇺🇸 你好 𝔘!";
  for (std::string name : {"qwen3", "llama3", "llama2"}) {
    const Tokenizer* t = test::real_tokenizer(name);
    ASSERT_NE(t, nullptr);
    std::vector<int32_t> ids = t->encode(text);
    std::vector<std::string> pieces;
    EXPECT_EQ(stream(*t, ids, true, &pieces), text) << name;
    size_t held = 0;
    for (const std::string& p : pieces) {
      EXPECT_TRUE(valid_utf8(p)) << name << ": " << test::escaped(p);
      EXPECT_EQ(p.find(tok::kReplacementChar), std::string::npos) << name << ": " << test::escaped(p);
      held += p.empty();
    }
    EXPECT_GT(held, 1u) << name << ": some ids end inside a character and must be held back";
  }
}

TEST(StreamDecoder, JoinedPiecesEqualDecode) {
  std::vector<std::string> texts = fixture_strings();
  for (std::string name : {"qwen3", "llama3", "llama2"}) {
    const Tokenizer* t = test::real_tokenizer(name);
    ASSERT_NE(t, nullptr);
    for (const std::string& s : texts) {
      std::vector<int32_t> ids = t->encode(s, true);
      for (bool skip : {true, false}) {
        std::vector<std::string> pieces;
        ASSERT_EQ(test::escaped(stream(*t, ids, skip, &pieces)), test::escaped(t->decode(ids, skip)))
            << name << " skip " << skip << " " << test::escaped(s);
        for (const std::string& p : pieces) ASSERT_TRUE(valid_utf8(p));
      }
    }
  }
}

TEST(StreamDecoder, RandomIdsGiveValidPiecesAndTheDecodedText) {
  // Random ids make every kind of broken byte sequence (lone continuation bytes, truncated
  // characters, runs of <0xNN>); the pieces stay valid UTF-8 and join to decode()'s text.
  std::mt19937 rng(3);
  for (std::string name : {"qwen3", "llama3", "llama2"}) {
    const Tokenizer* t = test::real_tokenizer(name);
    ASSERT_NE(t, nullptr);
    for (int round = 0; round < 300; ++round) {
      std::vector<int32_t> ids;
      size_t n = 1 + rng() % 12;
      for (size_t i = 0; i < n; ++i) {
        // Favour single-byte tokens: Llama 2's <0xNN> are ids 3..258; byte-level ones are low ids.
        ids.push_back(rng() % 2 ? int32_t(3 + rng() % 256) : int32_t(rng() % t->vocab_size()));
      }
      std::vector<std::string> pieces;
      ASSERT_EQ(test::escaped(stream(*t, ids, true, &pieces)), test::escaped(t->decode(ids, true)))
          << name << " " << test::ids_text(ids);
      for (const std::string& p : pieces) ASSERT_TRUE(valid_utf8(p)) << name << " " << test::ids_text(ids);
    }
  }
}

TEST(StreamDecoder, BytesThatCannotBecomeTextComeOutAsReplacement) {
  const Tokenizer* t = test::real_tokenizer("qwen3");
  ASSERT_NE(t, nullptr);
  // "ÿ" is byte 0xFF in the byte-level alphabet: never valid UTF-8.
  auto ff = t->token_id("ÿ");
  ASSERT_TRUE(ff.has_value());
  StreamDecoder d(*t);
  EXPECT_EQ(d.push(*ff), "");  // could still be the start of something: held
  EXPECT_EQ(d.push(t->encode("a")[0]), "\xEF\xBF\xBD" "a");
  // A character cut short by the end of the stream: flush gives U+FFFD.
  std::vector<int32_t> emoji = t->encode("\U0010fffd");  // a private-use character: one token a byte
  ASSERT_GT(emoji.size(), 1u);
  StreamDecoder e(*t);
  EXPECT_EQ(e.push(emoji[0]), "");
  EXPECT_EQ(e.flush(), "\xEF\xBF\xBD");
}

TEST(StreamDecoder, SkipsSpecialTokensUnlessAsked) {
  const Tokenizer* t = test::real_tokenizer("qwen3");
  ASSERT_NE(t, nullptr);
  std::vector<int32_t> ids = t->encode("<|im_start|>assistant\nHi<|im_end|>");
  EXPECT_EQ(stream(*t, ids, true, nullptr), "assistant\nHi");
  EXPECT_EQ(stream(*t, ids, false, nullptr), "<|im_start|>assistant\nHi<|im_end|>");
}

// --- added tokens, config, vocab ----------------------------------------------------------------

TEST(AddedTokens, QwenMatchesSpecialAndNonSpecialTokensInText) {
  const Tokenizer* t = test::real_tokenizer("qwen3");
  ASSERT_NE(t, nullptr);
  std::vector<int32_t> ids = t->encode("a<|im_end|>b<think>c</think>");
  std::vector<int32_t> want = {t->encode("a")[0], 151645, t->encode("b")[0], 151667, t->encode("c")[0], 151668};
  EXPECT_EQ(ids, want) << test::tokens_text(*t, ids);
  EXPECT_TRUE(t->is_special(151645));
  EXPECT_FALSE(t->is_special(151667));  // <think> is added but not special: decode keeps it
  EXPECT_EQ(t->decode(ids, true), "ab<think>c</think>");
  EXPECT_EQ(t->decode(ids, false), "a<|im_end|>b<think>c</think>");
  std::vector<int32_t> unfinished = t->encode("<|im_end");  // plain text
  EXPECT_EQ(std::count(unfinished.begin(), unfinished.end(), 151645), 0);
  EXPECT_EQ(t->decode(unfinished), "<|im_end");
}

TEST(AddedTokens, LlamaBeginOfTextAndBos) {
  const Tokenizer* l3 = test::real_tokenizer("llama3");
  const Tokenizer* l2 = test::real_tokenizer("llama2");
  ASSERT_TRUE(l3 && l2);
  EXPECT_EQ(l3->encode("<|begin_of_text|>Hi")[0], 128000);
  // This Llama 3 file's post-processor is ByteLevel only: no BOS is added (HF does the same).
  EXPECT_EQ(l3->encode("Hi", true), l3->encode("Hi", false));
  EXPECT_EQ(l2->encode("Hi", true)[0], 1);
  EXPECT_EQ(l2->encode("Hi", true).size(), l2->encode("Hi").size() + 1);
  EXPECT_EQ(l2->encode("", true), std::vector<int32_t>{1});
  EXPECT_TRUE(l2->encode("").empty());
}

TEST(TokenizerConfig, SpecialTokensAndVocab) {
  const Tokenizer* q = test::real_tokenizer("qwen3");
  const Tokenizer* l3 = test::real_tokenizer("llama3");
  const Tokenizer* l2 = test::real_tokenizer("llama2");
  ASSERT_TRUE(q && l3 && l2);
  EXPECT_EQ(q->vocab_size(), 151669u);
  EXPECT_EQ(l3->vocab_size(), 128256u);
  EXPECT_EQ(l2->vocab_size(), 32000u);
  EXPECT_EQ(q->eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(q->pad_id(), 151643);  // <|endoftext|>
  EXPECT_EQ(q->bos_id(), std::nullopt);
  EXPECT_EQ(q->add_bos_token(), false);
  ASSERT_TRUE(q->chat_template().has_value());
  EXPECT_NE(q->chat_template()->find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(l3->bos_id(), 128000);
  EXPECT_EQ(l3->eos_id(), 128001);
  EXPECT_EQ(l2->bos_id(), 1);
  EXPECT_EQ(l2->eos_id(), 2);
  EXPECT_EQ(l2->pad_id(), std::nullopt);
  EXPECT_EQ(l2->add_bos_token(), true);
  EXPECT_EQ(q->token(151645), "<|im_end|>");
  EXPECT_EQ(q->token_id("<|im_end|>"), 151645);
  EXPECT_EQ(q->token(q->token_id("Hello").value()), "Hello");
  EXPECT_EQ(q->token(q->token_id("ĠHello").value()), "ĠHello");
  EXPECT_EQ(q->token(-1), "");
  EXPECT_EQ(q->token(1 << 30), "");
  EXPECT_EQ(q->token_id("no such token at all"), std::nullopt);
  EXPECT_EQ(l2->token(1), "<s>");
  EXPECT_EQ(l2->token_id("<0x0A>"), 13);
  EXPECT_EQ(q->source(), test::tokenizer_dir("qwen3") / "tokenizer.json");
  // decode drops ids outside the vocab, as HF does.
  EXPECT_EQ(q->decode(std::vector<int32_t>{-5, 1 << 30, q->encode("x")[0]}), "x");
}

// --- synthetic tokenizer.json files -------------------------------------------------------------

class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ls_tokenizer_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::filesystem::path write(const json& j) { return write("tokenizer.json", j.dump()); }

  // A byte-level BPE whose ids are the byte values (no merges unless given).
  static json byte_level(json merges = json::array()) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[tok::byte_level_alphabet().byte_to_utf8[size_t(b)]] = b;
    return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"added_tokens", json::array()}};
  }
  static json added(int id, const std::string& content, json flags = json::object()) {
    json t = {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
              {"normalized", false}, {"special", true}};
    t.update(flags);
    return t;
  }
  static std::vector<int32_t> bytes(std::string_view s) {
    std::vector<int32_t> ids;
    for (char c : s) ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  static std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  }

  // Expects load to throw ls::Error naming the file and containing `problem`.
  void expect_load_error(const json& j, const std::string& problem) {
    std::filesystem::path p = write(j);
    try {
      Tokenizer::load(p);
      ADD_FAILURE() << "no error for " << problem;
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(p.string()), std::string::npos) << what;
      EXPECT_NE(what.find(problem), std::string::npos) << "want \"" << problem << "\" in: " << what;
    }
  }

  std::filesystem::path dir_;
};

TEST_F(TokenizerFiles, AddedTokensLongestMatchFirst) {
  json j = byte_level();
  j["added_tokens"] = {added(256, "<a>"), added(257, "<a><b>")};
  Tokenizer t = Tokenizer::load(write(j));
  EXPECT_EQ(t.encode("x<a><b>y<a>"), cat({bytes("x"), {257}, bytes("y"), {256}}));
  EXPECT_EQ(t.encode("<a<a>"), cat({bytes("<a"), {256}}));
  EXPECT_EQ(t.decode(t.encode("x<a><b>y<a>")), "x<a><b>y<a>");
  EXPECT_EQ(t.decode(t.encode("x<a><b>y<a>"), true), "xy");
}

TEST_F(TokenizerFiles, AddedTokenSingleWordLstripRstrip) {
  json j = byte_level();
  j["added_tokens"] = {added(256, "<mask>", {{"single_word", true}}), added(257, "[L]", {{"lstrip", true}}),
                       added(258, "[R]", {{"rstrip", true}})};
  Tokenizer t = Tokenizer::load(write(j));
  // A match touching a word character on either side is not the token (HF's test of single_word).
  EXPECT_EQ(t.encode("<mask> my <mask> A<mask> <mask>ony <mask>"),
            cat({{256}, bytes(" my "), {256}, bytes(" A<mask> <mask>ony "), {256}}));
  EXPECT_EQ(t.encode("<mask>, <mask>-"), cat({{256}, bytes(", "), {256}, bytes("-")}));
  // lstrip / rstrip take the whitespace beside the token (any Unicode White_Space) into it.
  EXPECT_EQ(t.encode("a \t [L]b"), cat({bytes("a"), {257}, bytes("b")}));
  EXPECT_EQ(t.encode("a[R] \n\u3000b"), cat({bytes("a"), {258}, bytes("b")}));
  EXPECT_EQ(t.encode("a [R] b"), cat({bytes("a "), {258}, bytes("b")}));
}

TEST_F(TokenizerFiles, NormalizedAddedTokensMatchNormalizedText) {
  json j = byte_level();
  j["normalizer"] = {{"type", "NFC"}};
  j["added_tokens"] = {added(256, "\u00e9", {{"normalized", true}, {"special", false}}),
                       added(257, "\u00c5", {{"normalized", false}})};
  Tokenizer t = Tokenizer::load(write(j));
  EXPECT_EQ(t.encode("e\u0301"), std::vector<int32_t>{256});  // NFD é: normalized, then matched
  EXPECT_EQ(t.encode("x\u00e9y"), cat({bytes("x"), {256}, bytes("y")}));
  EXPECT_EQ(t.encode("\u00c5"), std::vector<int32_t>{257});
  // A + combining ring is only Å after normalization, where non-normalized tokens are not matched.
  EXPECT_EQ(t.encode("A\u030a"), bytes("\u00c5"));
}

TEST_F(TokenizerFiles, ByteLevelWithGpt2RegexAndPrefixSpace) {
  // Merges "Ġ h" then "Ġh i": " hi" is one token only when the regex keeps the space with the word.
  json j = byte_level({"Ġ h", "Ġh i"});
  j["model"]["vocab"]["Ġh"] = 256;
  j["model"]["vocab"]["Ġhi"] = 257;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  Tokenizer t = Tokenizer::load(write(j));
  EXPECT_EQ(t.encode("hi hi"), (std::vector<int32_t>{257, 257}));  // prefix space added: " hi", " hi"
  EXPECT_EQ(t.encode(" hi"), (std::vector<int32_t>{257}));         // already starts with a space
  EXPECT_EQ(t.encode("hi  hi"), (std::vector<int32_t>{257, 32, 257}));  // \s+(?!\S) leaves one space
}

TEST_F(TokenizerFiles, MetaspacePrependSchemes) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"\u2581", 2}};
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = 3 + (c - 'a');
  vocab["\u2581h"] = 29;
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\u2581 h"}}, {"unk_token", "<unk>"}}},
            {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", true}}},
            {"decoder", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}}},
            {"added_tokens", {added(1, "<s>")}}};
  auto id = [](char c) { return int32_t(3 + (c - 'a')); };
  Tokenizer first = Tokenizer::load(write(j));
  EXPECT_EQ(first.encode("hi there"), (std::vector<int32_t>{29, id('i'), 2, id('t'), id('h'), id('e'), id('r'), id('e')}));
  EXPECT_EQ(first.encode("<s>hi"), (std::vector<int32_t>{1, id('h'), id('i')}));  // not at the input's start
  EXPECT_EQ(first.decode(first.encode("hi there")), "hi there");
  EXPECT_EQ(first.encode("h?"), (std::vector<int32_t>{29, 0}));  // unknown character: <unk>

  j["pre_tokenizer"]["prepend_scheme"] = "always";
  Tokenizer always = Tokenizer::load(write(j));
  EXPECT_EQ(always.encode("<s>hi"), (std::vector<int32_t>{1, 29, id('i')}));
  EXPECT_EQ(always.decode(always.encode("<s>hi"), true), "hi");
}

TEST_F(TokenizerFiles, ConfigTokensAsObjects) {
  json j = byte_level();
  j["added_tokens"] = {added(256, "<s>"), added(257, "</s>")};
  write(j);
  write("tokenizer_config.json",
        R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
            "add_bos_token": true, "chat_template": [{"name": "default", "template": "T"}]})");
  Tokenizer t = Tokenizer::load(dir_);
  EXPECT_EQ(t.bos_id(), 256);
  EXPECT_EQ(t.eos_id(), 257);
  EXPECT_EQ(t.pad_id(), std::nullopt);
  EXPECT_EQ(t.add_bos_token(), true);
  EXPECT_EQ(t.chat_template(), "T");
}

// --- malformed files ----------------------------------------------------------------------------

TEST_F(TokenizerFiles, MalformedFilesNameTheFileAndTheProblem) {
  auto missing = dir_ / "nope" / "tokenizer.json";
  try {
    Tokenizer::load(missing);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string() + ": cannot open"), std::string::npos) << e.what();
  }
  {
    std::filesystem::path p = write("tokenizer.json", "{\"model\": ");
    try {
      Tokenizer::load(p);
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": invalid JSON"), std::string::npos) << e.what();
    }
  }
  {
    // Found by tests/fuzz/tokenizer_json_fuzz: a number past double's range is nlohmann's out_of_range,
    // not a parse_error, and escaped the loader as a bare library exception.
    std::filesystem::path p = write("tokenizer.json", "99999999.9999999e999999");
    try {
      Tokenizer::load(p);
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": invalid JSON"), std::string::npos) << e.what();
    }
  }
  expect_load_error(json::array(), "expected a JSON object");
  expect_load_error(json{{"normalizer", nullptr}}, "missing \"model\"");

  json j = byte_level();
  j["model"]["type"] = "WordPiece";
  expect_load_error(j, "model: unsupported model type \"WordPiece\"");
  j = byte_level();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_load_error(j, "pre_tokenizer: unsupported pre_tokenizer type \"Whitespace\"");
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Digits"}}}}};
  expect_load_error(j, "pre_tokenizer.pretokenizers[1]: unsupported pre_tokenizer type \"Digits\"");
  j = byte_level();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_load_error(j, "normalizer: unsupported normalizer type \"Lowercase\"");
  j = byte_level();
  j["decoder"] = {{"type", "CTC"}};
  expect_load_error(j, "decoder: unsupported decoder type \"CTC\"");
  j = byte_level();
  j["post_processor"] = {{"type", "Wordy"}};
  expect_load_error(j, "post_processor: unsupported post_processor type \"Wordy\"");
  j = byte_level();
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}}},
                         {"special_tokens", json::object()}};
  expect_load_error(j, "post_processor.single[0]: special token \"<s>\" is not in \"special_tokens\"");

  j = byte_level({"a b", "a zz"});
  j["model"]["vocab"]["ab"] = 256;
  expect_load_error(j, "model.merges[1]: token \"zz\" is not in the vocab");
  j = byte_level({"a b"});
  expect_load_error(j, "model.merges[0]: token \"ab\" is not in the vocab");
  j = byte_level({"a b c"});
  expect_load_error(j, "model.merges[0]: \"a b c\" is not two tokens");
  j = byte_level({json{1, 2}});
  expect_load_error(j, "model.merges[0]: expected \"a b\" or [\"a\", \"b\"]");
  j = byte_level();
  j["model"]["vocab"]["x"] = -3;
  expect_load_error(j, "model.vocab: token \"x\": id must be an integer");
  j = byte_level();
  j["model"]["vocab"]["far"] = 2000000;
  expect_load_error(j, "model.vocab: ids go up to 2000000 for 257 tokens: too sparse");
  j = byte_level();
  j["added_tokens"] = json::array({added(2147483000, "<far>")});  // (a bare {x} is x itself under clang)
  expect_load_error(j, "added_tokens[0].id: expected a token id in [0, 16777215]");
  j = byte_level();
  j["model"]["vocab"] = json::array();
  expect_load_error(j, "model.vocab: expected an object");
  j = byte_level();
  j["model"]["unk_token"] = "<unk>";
  expect_load_error(j, "model.unk_token: \"<unk>\" is not in the vocab");
  j = byte_level();
  j["model"]["dropout"] = 0.1;
  expect_load_error(j, "BPE dropout is not supported");
  j = byte_level();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_load_error(j, "pre_tokenizer.pattern: cannot compile regex /(unclosed/");
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "x"}}}, {"behavior", "Sideways"}};
  expect_load_error(j, "pre_tokenizer.behavior: unsupported split behavior \"Sideways\"");
  j = byte_level();
  j["added_tokens"] = {{{"content", "<x>"}}};
  expect_load_error(j, "added_tokens[0].id: expected a token id");

  write(byte_level());
  std::filesystem::path config = write("tokenizer_config.json", "{bad");
  try {
    Tokenizer::load(dir_);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(config.string() + ": invalid JSON"), std::string::npos) << e.what();
  }
}

TEST_F(TokenizerFiles, DamagedFilesGiveErrorsNeverCrashes) {
  // A file using every supported component, then 600 copies with one value replaced by a wrong type,
  // removed, or the text cut short: each loads or throws ls::Error; what loads encodes and decodes.
  json base = byte_level({"a b"});
  base["model"]["vocab"]["ab"] = 256;
  base["model"]["byte_fallback"] = false;
  base.update(json::parse(R"({
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "NFC"}, {"type": "Replace", "pattern": {"String": " "}, "content": " "}, {"type": "Prepend", "prepend": "x"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s+|\\p{L}+"}, "behavior": "Isolated", "invert": false},
      {"type": "Metaspace", "replacement": "_", "prepend_scheme": "first", "split": true},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [257], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "_"}, "content": " "}, {"type": "ByteFallback"}, {"type": "ByteLevel"},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
  })"));
  base["added_tokens"] = {added(257, "<s>"), added(258, "<t>", {{"lstrip", true}, {"single_word", true}})};
  ASSERT_NO_THROW(Tokenizer::load(write(base)));

  std::vector<std::string> leaves;
  json flat = base.flatten();
  for (auto& [k, v] : flat.items()) leaves.push_back(k);
  const std::vector<json> wrong = {nullptr, 5, -1, "x", "", json::array(), json::object(), true, 1e30, 4294967296.0};
  std::mt19937 rng(17);
  int loaded = 0;
  for (int i = 0; i < 600; ++i) {
    std::string text;
    if (i % 5 == 4) {  // cut short
      text = base.dump();
      text.resize(rng() % text.size());
    } else {
      json j = base;
      json::json_pointer at(leaves[rng() % leaves.size()]);
      if (i % 5 == 3) at = at.parent_pointer();  // a whole component or list
      if (rng() % 4 == 0 && !at.empty()) {
        json& parent = j[at.parent_pointer()];
        if (parent.is_object()) parent.erase(at.back());
        else if (parent.is_array() && !parent.empty()) parent.erase(parent.size() - 1);
      } else {
        j[at] = wrong[rng() % wrong.size()];
      }
      text = j.dump();
    }
    std::filesystem::path p = write("tokenizer.json", text);
    try {
      Tokenizer t = Tokenizer::load(p);
      ++loaded;
      std::vector<int32_t> ids = t.encode("a b <s> ab\u00e9 <t>x", true);
      t.decode(ids, false);
      t.decode(ids, true);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ls::Error: " << e.what() << "\n" << text;
    }
  }
  std::printf("%d of 600 damaged files loaded\n", loaded);
}

TEST_F(TokenizerFiles, EncodeRejectsInvalidUtf8) {
  std::filesystem::path p = write(byte_level());
  Tokenizer t = Tokenizer::load(p);
  try {
    t.encode("abc\xC3(");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string() + ": encode: the text is not valid UTF-8 at byte 3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.encode("\xED\xA0\x80"), Error);  // a surrogate
  EXPECT_THROW(t.encode("\xC0\xAF"), Error);      // overlong
}

// --- pieces -------------------------------------------------------------------------------------

TEST(TokenizerUtf8, LossyReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(tok::utf8_lossy("a\xE2\x82"), "a\xEF\xBF\xBD");                 // truncated: one U+FFFD
  EXPECT_EQ(tok::utf8_lossy("\xF0\x9F\x98" "A"), "\xEF\xBF\xBD" "A");
  EXPECT_EQ(tok::utf8_lossy("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(tok::utf8_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(tok::utf8_lossy("\xE2\x82\xAC"), "\xE2\x82\xAC");
}

TEST(TokenizerRegex, OnigurumaWhitespaceAndEmptyMatches) {
  EXPECT_EQ(tok::onig_to_pcre2(R"(\s+(?!\S)|[^\s\p{L}])"), R"([\s\x{85}]+(?![^\s\x{85}])|[^\s\x{85}\p{L}])");
  std::vector<std::pair<size_t, size_t>> m;
  tok::Regex ws(R"(\s+)", "test");
  ws.find_all("a\u0085b", m);  // NEL is White_Space for Oniguruma (and HF), not for PCRE2's \s
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{1, 3}}));
  // Empty matches as the onig crate's find_iter: none right after the previous match.
  tok::Regex star("a*", "test");
  star.find_all("baa", m);
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 3}}));
  // Case-insensitive contractions fold as Unicode does.
  tok::Regex contraction("(?i:'s|'ll)", "test");
  contraction.find_all("IT'S we'LL", m);
  EXPECT_EQ(m.size(), 2u);
}

// --- threads and speed --------------------------------------------------------------------------

TEST(TokenizerThreads, ConcurrentEncodeMatchesSerial) {
  const Tokenizer* t = test::real_tokenizer("qwen3");
  ASSERT_NE(t, nullptr);
  std::vector<std::string> texts = fixture_strings();
  std::vector<std::vector<int32_t>> serial;
  for (const std::string& s : texts) serial.push_back(t->encode(s));
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          size_t at = (i * 7 + size_t(k) * 13) % texts.size();  // different orders per thread
          bad[size_t(k)] += t->encode(texts[at]) != serial[at];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

TEST(TokenizerThroughput, PrintsMegabytesPerSecond) {
  // About 1 MB of the fixture strings (prose, code, CJK, emoji) end to end; printed, not asserted.
  // Then 1 MB of random lowercase "words", nearly all new to the word cache: the worst case.
  std::vector<std::string> texts = fixture_strings();
  std::string corpus;
  while (corpus.size() < (1u << 20)) {
    for (const std::string& s : texts) corpus += s + "\n";
  }
  std::mt19937 rng(5);
  std::string words;
  while (words.size() < (1u << 20)) {
    for (size_t n = 3 + rng() % 8; n > 0; --n) words += char('a' + rng() % 26);
    words += rng() % 12 ? " " : ".\n";
  }
  for (std::string name : {"qwen3", "llama3", "llama2"}) {
    const Tokenizer* t = test::real_tokenizer(name);
    ASSERT_NE(t, nullptr);
    for (const auto& [what, text] : {std::pair{"fixture strings", &corpus}, std::pair{"random words", &words}}) {
      auto t0 = std::chrono::steady_clock::now();
      size_t tokens = t->encode(*text).size();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double mb = double(text->size()) / 1e6;
      std::printf("%-7s encode %-15s: %.2f MB in %.3f s = %5.1f MB/s, %.1fM tokens/s\n", name.c_str(), what, mb, s,
                  mb / s, double(tokens) / s / 1e6);
      EXPECT_GT(tokens, text->size() / 10);
    }
  }
}

}  // namespace
}  // namespace ls
