// lorastudio: command line entry. Until the GUI lands, it reports the version and the Vulkan devices.
#include <CLI/CLI.hpp>

#include <iostream>

#include "error.h"
#include "vk/device.h"

int main(int argc, char** argv) {
  CLI::App app{"lorastudio — LoRA fine-tuning of language models on any Vulkan GPU"};
  bool version = false, devices = false;
  std::string device;
  app.add_flag("--version", version, "Print the version and exit");
  app.add_flag("--devices", devices, "List the Vulkan devices with the features lorastudio uses");
  app.add_option("--device", device,
                 "Vulkan device to use: its number from --devices or part of its name "
                 "(default: LORASTUDIO_DEVICE, else discrete > integrated > CPU)");
  CLI11_PARSE(app, argc, argv);

  try {
    if (version) {
      std::cout << "lorastudio " << LS_VERSION << "\n";
      if (!devices) return 0;
    }
    auto reports = ls::vk::list_devices();
    uint32_t chosen = ls::vk::choose_device(reports, device.empty() && std::getenv("LORASTUDIO_DEVICE")
                                                         ? std::getenv("LORASTUDIO_DEVICE") : device);
    for (const auto& r : reports) {
      std::cout << ls::vk::format_report(r);
      if (r.index == chosen) std::cout << "  (selected)\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lorastudio: " << e.what() << "\n";
    return 1;
  }
}
