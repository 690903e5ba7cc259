// lorastudio-bench: GPU timings of the engine. `micro` times single kernels (the seed documents'
// table plus the model's real shapes). decode, prefill and train arrive with the model issues.
#include <CLI/CLI.hpp>

#include <iostream>

#include "micro.h"
#include "vk/device.h"

int main(int argc, char** argv) {
  CLI::App app{"lorastudio-bench — GPU timings from timestamp queries"};
  app.require_subcommand(1);
  std::string device, json;
  int iters = 200;
  auto* micro = app.add_subcommand("micro", "time single kernels: per-dispatch GPU time and submit+wait wall time");
  micro->add_option("--json", json, "also write the results as JSON to this file");
  micro->add_option("--iters", iters, "ops recorded per case (median taken)")->check(CLI::Range(10, 100000));
  app.add_option("--device", device, "Vulkan device: number or part of the name (default: LORASTUDIO_DEVICE, else best)");
  CLI11_PARSE(app, argc, argv);
  try {
    ls::vk::Device dev({.select = device});
    std::cout << ls::vk::format_report(dev.report());
    if (*micro) return ls::bench::run_micro(dev, iters, json);
  } catch (const std::exception& e) {
    std::cerr << "lorastudio-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
