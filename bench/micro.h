#pragma once
#include <string>

#include "vk/device.h"

namespace ls::bench {

// Times each micro case: GPU time per op from timestamps (median over `iters` ops recorded in one
// command buffer) and the wall time of one submit+wait of a single op. Prints a table; writes JSON
// to json_path when not empty. A non-empty filter keeps the cases whose name contains it.
int run_micro(vk::Device& device, int iters, const std::string& json_path, const std::string& filter = "");

}  // namespace ls::bench
