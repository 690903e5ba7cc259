#pragma once
// `lorastudio --demo`: the whole job in a few minutes with nothing downloaded. Says what the demo model
// is (tiny, random weights) and what to download for real work; makes or finds the demo model and data
// (engine/demo); trains a LoRA adapter headless exactly as `--batch` does (progress, the run and its loss
// curve in the run store, the held-out split as validation data); then asks the base model and the
// adapter the first held-out questions, greedy, and prints both answers one after the other.
#include <cstdint>
#include <string>

namespace ls::app {

struct DemoArgs {
  uint32_t steps = 0;   // 0: demo::kDemoSteps
  std::string out;      // the run folder (default: runs/demo-<date> beside the run store)
  std::string store;    // the run store (default: store::default_store_path(), the one the GUI reads)
  std::string device;   // as --device
  bool quiet = false;   // no progress lines while training
};

// Returns the exit code: 0, or 130 when Ctrl-C stopped the training (after a checkpoint).
int run_demo(const DemoArgs& args);

}  // namespace ls::app
