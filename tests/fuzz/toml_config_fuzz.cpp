// `--config FILE` (app/toml_config.h): a TOML file read into a command's options, as `--batch` reads it.
#include <CLI/CLI.hpp>

#include "app/toml_config.h"
#include "error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "run.toml");
  CLI::App app("fuzz");
  double lr = 0;
  unsigned rank = 0, steps = 0;
  std::string model, targets;
  bool flag = false;
  std::vector<std::string> list;
  app.add_option("--lr", lr);
  app.add_option("--rank", rank);
  app.add_option("--steps", steps);
  app.add_option("--model", model);
  app.add_option("--targets", targets);
  app.add_option("--data", list);
  app.add_flag("--grad-checkpoint", flag);
  ls::app::add_toml_config(app, "--config", "a TOML file");
  try {
    const std::string p = path.string();
    const char* argv[] = {"fuzz", "--config", p.c_str()};
    app.parse(3, argv);
  } catch (const CLI::Error&) {
  } catch (const ls::Error&) {
  }
  return 0;
}
