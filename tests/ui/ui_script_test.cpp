// The --ui-script parser: commands with their arguments, comments and blank lines skipped, and errors
// that name the file and line. Settings round trip through their JSON and survive malformed text.
#include <gtest/gtest.h>

#include "error.h"
#include "support/testing.h"
#include "ui/settings.h"
#include "ui/ui_script.h"

namespace ls {
namespace {

TEST(UiScript, ParsesCommandsSkippingCommentsAndBlankLines) {
  auto s = ui::UiScript::parse("# a scenario\n\nclick train.start\n  type What is 2+2?  \nwait_for steps>=3 20\ntimeout 9\nquit\n",
                               "s.txt");
  EXPECT_EQ(s.steps(), 4u);  // timeout is a setting, not a step
  EXPECT_FALSE(s.done());
}

TEST(UiScript, ErrorsNameTheFileAndLine) {
  test::expect_error_naming([] { ui::UiScript::parse("click a\nfrobnicate b\n", "s.txt"); }, "s.txt:2: unknown command \"frobnicate\"");
  test::expect_error_naming([] { ui::UiScript::parse("\nclick\n", "s.txt"); }, "s.txt:2: click needs an argument");
  test::expect_error_naming([] { ui::UiScript::parse("key f13\n", "s.txt"); }, "s.txt:1: key \"f13\"");
}

TEST(UiScript, MissingFileIsAnError) {
  EXPECT_THROW(ui::UiScript::load("/nonexistent/script.txt"), Error);
}

TEST(UiSettings, RoundTripAndForgivingReads) {
  ui::UiSettings a;
  a.train.config.steps = 17;
  a.train.config.schedule.lr = 3e-4f;
  a.train.targets[3] = true;
  a.train.schedule = 2;
  a.chat.sampling.temperature = 0.25f;
  a.chat.side_by_side = true;
  a.eval.max_tokens = 300;
  a.eval.compare_base = false;
  a.model = "/models/qwen";
  a.panels["gpu"] = false;
  ui::UiSettings b;
  ui::read_settings(ui::settings_json(a), b);
  EXPECT_EQ(ui::settings_json(a), ui::settings_json(b));
  EXPECT_EQ(b.train.config.steps, 17u);
  EXPECT_TRUE(b.train.targets[3]);
  EXPECT_EQ(b.eval.max_tokens, 300u);
  EXPECT_FALSE(b.eval.compare_base);
  EXPECT_FALSE(b.panels.at("gpu"));

  ui::UiSettings c;
  const std::string defaults = ui::settings_json(c);
  ui::read_settings("not json", c);
  ui::read_settings(R"({"train": {"steps": "many", "schedule": 9}, "chat": [], "model": 3,
                         "eval": {"max_tokens": 0, "batch": 100000, "compare_base": "yes"}})",
                    c);
  EXPECT_EQ(ui::settings_json(c), defaults);  // wrong types and ranges keep the defaults
}

}  // namespace
}  // namespace ls
