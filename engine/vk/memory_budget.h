#pragma once
// How much device memory this process may still take, for memory plans (train/memory_plan.h): the
// device-local heaps' size; the driver's budget for this process where the device offers
// VK_EXT_memory_budget (other programs' use already taken out), else the heaps' size; less what this
// process holds in them now. LORASTUDIO_DEVICE_MEMORY_BUDGET overrides the budget: bytes, or a number
// with a suffix K, M, G or T (powers of 1024; "KiB", "MiB", ... and "KB", "MB", ... read the same), e.g.
// "6G": to leave room for other programs, or to try what fits on a smaller GPU.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vk/vulkan.h"

namespace ls::vk {

struct MemoryBudget {
  uint64_t heap_bytes = 0;    // the device-local heaps
  uint64_t budget_bytes = 0;  // what this process may hold in them
  uint64_t in_use_bytes = 0;  // what it holds now: the driver's count with the extension, else our allocator's blocks
  std::string source;         // where budget_bytes comes from: "VK_EXT_memory_budget", "device-local heap size",
                              // "LORASTUDIO_DEVICE_MEMORY_BUDGET"
  uint64_t available() const { return budget_bytes > in_use_bytes ? budget_bytes - in_use_bytes : 0; }
};

// Reads the heaps (and the budget when has_budget_extension: the device was created with
// VK_EXT_memory_budget enabled). allocator_bytes: the bytes of our allocator's blocks, the fallback count of
// what this process holds. Throws ls::Error when LORASTUDIO_DEVICE_MEMORY_BUDGET is set but not a size.
MemoryBudget read_memory_budget(VkPhysicalDevice physical, bool has_budget_extension, uint64_t allocator_bytes);

// "6G", "512MiB", "1.5 GiB", "1073741824" -> bytes; nullopt for anything else.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace ls::vk
