#pragma once
// What the GUI tests share: reading the files the app wrote, and the command that runs it on a display
// (Xvfb, started by xvfb-run, when DISPLAY is unset).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

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

}  // namespace ls::test
