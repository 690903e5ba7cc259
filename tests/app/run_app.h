#pragma once
// Runs the lorastudio binary as users do, for the tests under tests/app/ (built with LS_APP_BINARY, the
// path of the app target; LS_APP_BINARY in the environment overrides it, e.g. for a stripped binary
// on another machine).
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ls::test {

struct AppResult {
  int code = -1;
  std::string out, err;
};

// Runs the binary with arguments (each single-quoted for the shell), capturing stdout and stderr.
inline AppResult run_app(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::filesystem::path err_file =
      std::filesystem::temp_directory_path() /
      ("ls_app_err_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
  std::string cmd = std::string("'") + binary + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>'" + err_file.string() + "'";
  AppResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::filesystem::remove(err_file);
  return r;
}

}  // namespace ls::test
