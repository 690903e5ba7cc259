// Chinese, Japanese and Korean text in the window (Xvfb when DISPLAY is unset, lavapipe, validation on): a data
// file of CJK conversations is previewed and CJK text is typed into the chat's input; the glyphs they need are
// built into the font atlas from the system's CJK font (the .deb recommends fonts-wqy-microhei, which
// scripts/deps.sh installs for the tests) while the window runs. Asserts: a CJK font was found, no character
// shown lacks its glyph (none would be drawn as "?"), no validation message; the screenshot is kept to look at.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gui_run.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

TEST(GuiCjk, ChineseJapaneseAndKoreanTextHaveTheirGlyphs) {
  const fs::path out = fs::path(LS_BINARY_DIR) / "gui_cjk_test";
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path src = LS_SOURCE_DIR;
  std::ofstream(out / "cjk.jsonl")
      << R"({"messages": [{"role": "user", "content": "法国的首都是哪里？"}, {"role": "assistant", "content": "巴黎。"}]})" << "\n"
      << R"({"messages": [{"role": "user", "content": "日本の首都はどこですか？"}, {"role": "assistant", "content": "東京です。"}]})" << "\n"
      << R"({"messages": [{"role": "user", "content": "한국의 수도는 어디입니까?"}, {"role": "assistant", "content": "서울입니다."}]})" << "\n";
  std::ofstream(out / "scenario.txt") << "timeout 120\n"
                                      << "drop " << (src / "tests/fixtures/models/qwen2_tiny").string() << "\n"
                                      << "wait_for model 60\n"
                                      << "drop " << (out / "cjk.jsonl").string() << "\n"
                                      << "wait_for data 60\n"
                                      << "click chat.input\n"
                                      << "type 你好，世界！こんにちは、안녕하세요\n"
                                      << "frames 5\n"
                                      << "screenshot " << (out / "gui_cjk.png").string() << "\n"
                                      << "state " << (out / "state.json").string() << "\n"
                                      << "quit\n";
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
  test::ScriptRun app;
  ASSERT_NO_FATAL_FAILURE(test::run_scenario(binary, out, out / "runs.sqlite", 1280, 720, app));
  const std::string& log = app.log;
  const nlohmann::json& state = app.state;
  EXPECT_EQ(state["script_error"], "");
  EXPECT_EQ(state["validation_messages"], 0) << log;
  ASSERT_NE(state["cjk_font"], "") << "no CJK font found: apt-get install fonts-wqy-microhei (scripts/deps.sh does)";
  EXPECT_EQ(state["glyphs_missing"], 0) << "characters shown without a glyph, with " << state["cjk_font"];
  EXPECT_GT(fs::file_size(out / "gui_cjk.png"), 10000u);
  std::printf("[ gui ] CJK fonts: %s; screenshot: %s\n", state["cjk_font"].get<std::string>().c_str(),
              (out / "gui_cjk.png").string().c_str());
}

}  // namespace
}  // namespace ls
