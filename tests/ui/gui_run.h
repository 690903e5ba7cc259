#pragma once
// What the GUI tests share: reading the files the app wrote, and the command that runs it on a display
// (Xvfb, started by xvfb-run, when DISPLAY is unset).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ls::test {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline bool have_program(const char* program) {
  return std::system((std::string("command -v ") + program + " >/dev/null 2>&1").c_str()) == 0;
}

// `cmd` as is when there is a DISPLAY, else under xvfb-run with a screen of `width`x`height`; nothing
// when neither a display nor Xvfb is there.
inline std::optional<std::string> on_a_display(const std::string& cmd, int width, int height) {
  const char* display = std::getenv("DISPLAY");
  if (display && *display) return cmd;
  if (!have_program("xvfb-run") || !have_program("Xvfb")) return std::nullopt;
  return "xvfb-run -a -s '-screen 0 " + std::to_string(width) + "x" + std::to_string(height) + "x24 -nolisten tcp' " + cmd;
}

// What the app left after a scenario: its state file (out/state.json, the scenario's `state` command) and output.
struct ScriptRun {
  nlohmann::json state;
  std::string log;
};

// Runs `binary --validation --ui-script out/scenario.txt --geometry WxH --store store` on a display, its output to
// out/log.txt. Fails the test (fatally) when there is no display or the app does not exit 0.
inline void run_scenario(const std::string& binary, const std::filesystem::path& out, const std::filesystem::path& store,
                         int width, int height, ScriptRun& run) {
  std::string cmd = "'" + binary + "' --validation --ui-script '" + (out / "scenario.txt").string() + "' --geometry " +
                    std::to_string(width) + "x" + std::to_string(height) + " --store '" + store.string() + "'";
  const auto shown = on_a_display(cmd, width, height);
  ASSERT_TRUE(shown) << "no DISPLAY and no Xvfb: apt-get install xvfb xauth";
  cmd = *shown + " >'" + (out / "log.txt").string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  run.log = read_text(out / "log.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << run.log;
  run.state = nlohmann::json::parse(read_text(out / "state.json"));
}

}  // namespace ls::test
