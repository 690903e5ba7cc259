#pragma once
// VK_ERROR_DEVICE_LOST (docs/reliability.md "A lost GPU"): the device, and everything in its memory, is gone;
// nothing more can run or be read on it. vk::check throws DeviceLost for it, so that the trainer can say at
// which step it happened and where its latest checkpoint is.
#include <cstdint>
#include <optional>
#include <string>

#include "error.h"

namespace ls::vk {

class DeviceLost : public Error {
 public:
  explicit DeviceLost(const std::string& what) : Error(what) {}
};

// Test hook (lavapipe never loses its device): after `submits` more submissions through Device::submit_and_wait
// in this process, every submission throws DeviceLost instead of reaching the queue, as a lost device does.
// std::nullopt (the default) turns it off.
void simulate_device_loss_after(std::optional<uint64_t> submits);

}  // namespace ls::vk
