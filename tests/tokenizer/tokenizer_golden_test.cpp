// Every string of tests/fixtures/tokenizer_strings.json through the real Qwen3, Llama 3, Llama 2 and Gemma 3
// tokenizers (scripts/fetch_tokenizers.sh) against tests/fixtures/tokenizer_ids.json, written by HF
// `tokenizers` (make_tokenizer_fixtures.py): ids without and with special tokens, decode with and
// without skip_special_tokens, and the decode of every id prefix of a few multi-byte strings. Exact.
// (Gemma 3's ids came first from @lenml/tokenizers, a port of transformers.js; HF `tokenizers` 0.23.2 on the GPU
// machine gave the same ids for all 396 strings, and one U+FFFD per byte token in the prefix decodes where the
// port wrote one per character. Its file is gone: this one holds HF's for all four.)
#include <gtest/gtest.h>

#include "tokenizer_fixtures.h"

namespace ls {
namespace {

using nlohmann::json;

const json& ids_fixture(const std::string&) {
  static const json hf = test::read_json(test::source_dir() / "tests/fixtures/tokenizer_ids.json");
  return hf;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, FixtureMatchesStringsFile) {
  json strings = test::read_json(test::source_dir() / "tests/fixtures/tokenizer_strings.json");
  EXPECT_EQ(ids_fixture(GetParam())["strings"], strings["strings"])
      << "tokenizer_ids.json is stale: run tests/fixtures/make_tokenizer_fixtures.py";
  EXPECT_EQ(ids_fixture(GetParam())["prefix_decode"], strings["prefix_decode"]);
  std::cout << "fixture generator: " << ids_fixture(GetParam())["generator"].get<std::string>() << "\n";
}

TEST_P(TokenizerGolden, EncodeAndDecodeMatchHf) {
  const tok::Tokenizer* t = test::real_tokenizer(GetParam());
  ASSERT_NE(t, nullptr);
  const json& strings = ids_fixture(GetParam())["strings"];
  const json& cases = ids_fixture(GetParam())["tokenizers"][GetParam()]["cases"];
  ASSERT_EQ(cases.size(), strings.size());
  int failures = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::string s = strings[i].get<std::string>();
    auto expected = cases[i]["ids"].get<std::vector<int32_t>>();
    auto expected_special = cases[i]["ids_special"].get<std::vector<int32_t>>();
    auto ids = t->encode(s);
    auto ids_special = t->encode(s, true);
    std::string decoded = t->decode(expected_special);
    std::string decoded_skip = t->decode(expected_special, true);
    bool ok = ids == expected && ids_special == expected_special && decoded == cases[i]["decode"].get<std::string>() &&
              decoded_skip == cases[i]["decode_skip"].get<std::string>();
    if (ok || ++failures > 20) continue;  // the first 20 failures in full
    ADD_FAILURE() << "string #" << i << " " << test::escaped(s) << "\n"
                  << "  ids      " << test::tokens_text(*t, ids) << "\n"
                  << "  expected " << test::tokens_text(*t, expected) << "\n"
                  << "  with special tokens " << test::ids_text(ids_special) << ", expected "
                  << test::ids_text(expected_special) << "\n"
                  << "  decode " << test::escaped(decoded) << ", expected " << cases[i]["decode"].dump() << "\n"
                  << "  decode skipping special " << test::escaped(decoded_skip) << ", expected "
                  << cases[i]["decode_skip"].dump();
  }
  EXPECT_EQ(failures, 0) << failures << " of " << strings.size() << " strings differ";
}

TEST_P(TokenizerGolden, DecodeOfEveryPrefixMatchesHf) {
  const tok::Tokenizer* t = test::real_tokenizer(GetParam());
  ASSERT_NE(t, nullptr);
  size_t checked = 0;
  for (const json& p : ids_fixture(GetParam())["tokenizers"][GetParam()]["prefix_decodes"]) {
    std::string s = p["string"].get<std::string>();
    auto ids = t->encode(s);
    ASSERT_EQ(ids.size(), p["decodes"].size()) << test::escaped(s);
    for (size_t k = 0; k < ids.size(); ++k) {
      std::span<const int32_t> prefix(ids.data(), k + 1);
      const std::string want = p["decodes"][k].get<std::string>();
      ++checked;
      EXPECT_EQ(test::escaped(t->decode(prefix)), test::escaped(want)) << test::escaped(s) << " first " << k + 1 << " ids";
    }
  }
  std::cout << checked << " prefix decodes checked\n";
}

INSTANTIATE_TEST_SUITE_P(Real, TokenizerGolden, ::testing::Values("qwen3", "llama3", "llama2", "gemma3"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ls
