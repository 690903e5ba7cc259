// Our tokenizer against HF `tokenizers` (the reference) on the real tokenizer.json files of Qwen3
// (byte-level, same BPE as Qwen2.5), Llama 3 (byte-level, ignore_merges) and Llama 2
// (SentencePiece-style, byte fallback): the ids of 251 varied strings (code, scripts, emoji, NFD and
// compatibility characters, whitespace runs, special tokens inside text, random strings), with and
// without special tokens, and HF's decode of those ids, must be identical (tests/fixtures/tokenizer_ids.json,
// made by tests/fixtures/make_tokenizer_fixtures.py). Also decode(encode(s)) == s for the byte-level ones
// (== NFC(s) for Qwen's, which normalises to NFC).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

fs::path tokenizer_dir(const std::string& name) {
  auto dir = fs::path(LS_SOURCE_DIR) / ".cache/tokenizers" / name;
  if (!fs::exists(dir / "tokenizer.json"))
    ADD_FAILURE() << dir << " is missing: run scripts/fetch_tokenizers.sh (scripts/test.sh does)";
  return dir;
}

nlohmann::json load(const char* file) {
  std::ifstream in(fs::path(LS_SOURCE_DIR) / "tests/fixtures" / file);
  return nlohmann::json::parse(in);
}

std::string show(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c < 0x20) out += "\\x" + std::to_string(c);
    else out += char(c);
  }
  return out.size() > 80 ? out.substr(0, 80) + "..." : out;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, IdsAndDecodesMatchHfTokenizers) {
  const auto dir = tokenizer_dir(GetParam());
  if (HasFailure()) return;
  const auto tok = tok::Tokenizer::load(dir);
  const auto strings = load("tokenizer_strings.json");
  const auto expected = load("tokenizer_ids.json");
  const auto& rows = expected.at("tokenizers").at(GetParam());
  ASSERT_EQ(rows.size(), strings.size());
  size_t bad = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string s = strings[i];
    const auto& row = rows[i];
    const auto ids = tok.encode(s, false);
    const auto ids_special = tok.encode(s, true);
    const auto want = row.at("ids").get<std::vector<int32_t>>();
    bool ok = ids == want && ids_special == row.at("ids_special").get<std::vector<int32_t>>() &&
              tok.decode(want, false) == row.at("decoded").get<std::string>() &&
              tok.decode(want, true) == row.at("decoded_skip").get<std::string>();
    if (!ok && ++bad <= 8) {
      ADD_FAILURE() << GetParam() << " string " << i << " \"" << show(s) << "\": ids "
                    << ::testing::PrintToString(ids) << " want " << ::testing::PrintToString(want) << "; decode \""
                    << show(tok.decode(want, false)) << "\" want \"" << show(row.at("decoded").get<std::string>()) << "\"";
    }
  }
  EXPECT_EQ(bad, 0u) << "strings that differ from HF tokenizers, of " << rows.size();
}

TEST_P(TokenizerGolden, DecodeOfEncodeIsIdentityForByteLevel) {
  if (GetParam() == "llama2") GTEST_SKIP() << "SentencePiece-style: the decoder strips the prepended space by design";
  const auto dir = tokenizer_dir(GetParam());
  if (HasFailure()) return;
  const auto tok = tok::Tokenizer::load(dir);
  // Qwen's tokenizer normalises to NFC first, so what comes back is the NFC form of the string.
  const bool nfc = GetParam() == "qwen3";
  for (const auto& j : load("tokenizer_strings.json")) {
    const std::string s = j;
    EXPECT_EQ(tok.decode(tok.encode(s)), nfc ? tok::normalize(s, tok::NormalForm::NFC) : s)
        << GetParam() << ": \"" << show(s) << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(Files, TokenizerGolden, ::testing::Values("qwen3", "llama3", "llama2"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ls
