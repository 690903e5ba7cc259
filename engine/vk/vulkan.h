#pragma once
// The one place engine/ includes Vulkan, plus check() for VkResult.
#include <vulkan/vulkan.h>

#include <string>

namespace ls::vk {

const char* result_name(VkResult r);
// Throws ls::Error("<what>: <VkResult name>") unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

}  // namespace ls::vk
