// Streaming text with stop strings (infer/text_stream.h), on the tiny Qwen2 fixture's tokenizer: the
// stop string is never shown, text that may start one is held back until it cannot, and what is shown
// is the decode of the ids up to the stop.
#include <gtest/gtest.h>

#include <filesystem>

#include "infer/text_stream.h"

namespace ls {
namespace {

tok::Tokenizer tiny() {
  return tok::Tokenizer::load(std::filesystem::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny");
}

std::string stream_all(const tok::Tokenizer& t, const std::string& text, std::vector<std::string> stops,
                       std::vector<std::string>* pieces, bool* stopped) {
  infer::TextStream s(t, std::move(stops));
  std::string out;
  for (int32_t id : t.encode(text)) {
    std::string p = s.push(id);
    if (pieces) pieces->push_back(p);
    out += p;
    if (s.stopped()) break;
  }
  out += s.finish();
  *stopped = s.stopped();
  EXPECT_EQ(out, s.text());
  return out;
}

TEST(TextStream, StopsAtSpecialTokenText) {
  auto t = tiny();
  bool stopped = false;
  EXPECT_EQ(stream_all(t, "Hello world<|im_end|>more", {"<|im_end|>"}, nullptr, &stopped), "Hello world");
  EXPECT_TRUE(stopped);
}

TEST(TextStream, HoldsBackPossibleStartOfStopString) {
  auto t = tiny();
  bool stopped = false;
  std::vector<std::string> pieces;
  EXPECT_EQ(stream_all(t, "abc ENDING def", {" END"}, &pieces, &stopped), "abc");
  EXPECT_TRUE(stopped);
  for (const auto& p : pieces) EXPECT_EQ(p.find("END"), std::string::npos) << p;
  // No stop string met: everything comes out, the held-back tail at the end.
  EXPECT_EQ(stream_all(t, "abc EN", {" END"}, nullptr, &stopped), "abc EN");
  EXPECT_FALSE(stopped);
}

TEST(TextStream, NoStopStrings) {
  auto t = tiny();
  bool stopped = false;
  const std::string text = "东京は日本の首都です。 😀";
  EXPECT_EQ(stream_all(t, text, {}, nullptr, &stopped), t.decode(t.encode(text)));
}

}  // namespace
}  // namespace ls
