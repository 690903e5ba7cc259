#pragma once
#include <string>

#include "vk/device.h"

namespace ls::bench {

// Times each micro case: GPU time per op from timestamps (median over `iters` ops recorded in one
// command buffer) and the wall time of one submit+wait of a single op. Prints a table; writes JSON
// to json_path when not empty.
int run_micro(vk::Device& device, int iters, const std::string& json_path);

}  // namespace ls::bench
