// Every string of tests/fixtures/tokenizer_strings.json through the real Qwen3, Llama 3 and Llama 2
// tokenizers (scripts/fetch_tokenizers.sh) against tests/fixtures/tokenizer_ids.json, written by HF
// `tokenizers` (make_tokenizer_fixtures.py): ids without and with special tokens, decode with and
// without skip_special_tokens, and the decode of every id prefix of a few multi-byte strings. Exact.
#include <gtest/gtest.h>

#include "tokenizer_fixtures.h"

namespace ls {
namespace {

using nlohmann::json;

const json& ids_fixture() {
  static const json j = test::read_json(test::source_dir() / "tests/fixtures/tokenizer_ids.json");
  return j;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, FixtureMatchesStringsFile) {
  json strings = test::read_json(test::source_dir() / "tests/fixtures/tokenizer_strings.json");
  EXPECT_EQ(ids_fixture()["strings"], strings["strings"])
      << "tokenizer_ids.json is stale: run tests/fixtures/make_tokenizer_fixtures.py";
  EXPECT_EQ(ids_fixture()["prefix_decode"], strings["prefix_decode"]);
  std::cout << "fixture generator: " << ids_fixture()["generator"].get<std::string>() << "\n";
}

TEST_P(TokenizerGolden, EncodeAndDecodeMatchHf) {
  const tok::Tokenizer* t = test::real_tokenizer(GetParam());
  ASSERT_NE(t, nullptr);
  const json& strings = ids_fixture()["strings"];
  const json& cases = ids_fixture()["tokenizers"][GetParam()]["cases"];
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
  for (const json& p : ids_fixture()["tokenizers"][GetParam()]["prefix_decodes"]) {
    std::string s = p["string"].get<std::string>();
    auto ids = t->encode(s);
    ASSERT_EQ(ids.size(), p["decodes"].size()) << test::escaped(s);
    for (size_t k = 0; k < ids.size(); ++k) {
      std::span<const int32_t> prefix(ids.data(), k + 1);
      EXPECT_EQ(test::escaped(t->decode(prefix)), test::escaped(p["decodes"][k].get<std::string>()))
          << test::escaped(s) << " first " << k + 1 << " ids";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Real, TokenizerGolden, ::testing::Values("qwen3", "llama3", "llama2"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ls
