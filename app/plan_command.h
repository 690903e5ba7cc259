#pragma once
// `lorastudio --batch ... --plan`: prints the run's memory plan (train/memory_plan.h) against the device's
// memory, and what to change when it does not fit, then exits without training. With --data the plan is
// the run's own (its batches sized from the data, as the trainer sizes them); without, the most these
// options can take (every row --seq-len tokens long, every token a target).
#include <string>

#include "train/trainer.h"

namespace ls::app {

// Prints the plan on stdout; returns the exit code (0, whether it fits or not).
int run_plan(const train::TrainConfig& config, const std::string& device);

}  // namespace ls::app
