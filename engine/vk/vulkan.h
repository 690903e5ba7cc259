#pragma once
// The one place engine/ includes Vulkan, plus check() for VkResult.
#include <vulkan/vulkan.h>

#include <string>

namespace ls::vk {

// VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2 came after Debian 12's headers (1.3.239): the
// structs the engine reads and enables, as the Vulkan registry defines them.
inline constexpr const char* kKhrCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
inline constexpr const char* kNvCooperativeMatrix2Extension = "VK_NV_cooperative_matrix2";
inline constexpr auto kSTypeCooperativeMatrixFeaturesKhr = static_cast<VkStructureType>(1000506000);
inline constexpr auto kSTypeCooperativeMatrix2FeaturesNv = static_cast<VkStructureType>(1000593000);
struct CooperativeMatrixFeaturesKhr {
  VkStructureType sType = kSTypeCooperativeMatrixFeaturesKhr;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
// vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR's records: the shapes and component types a device's
// cooperative matrices take. Component types and scopes have the values of their NV counterparts.
inline constexpr auto kSTypeCooperativeMatrixPropertiesKhr = static_cast<VkStructureType>(1000506001);
struct CooperativeMatrixPropertiesKhr {
  VkStructureType sType = kSTypeCooperativeMatrixPropertiesKhr;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  VkComponentTypeNV AType{}, BType{}, CType{}, ResultType{};
  VkBool32 saturatingAccumulation = VK_FALSE;
  VkScopeNV scope{};
};
using PfnCooperativeMatrixPropertiesKhr = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                                 CooperativeMatrixPropertiesKhr*);
struct CooperativeMatrix2FeaturesNv {
  VkStructureType sType = kSTypeCooperativeMatrix2FeaturesNv;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};

const char* result_name(VkResult r);
// Throws ls::Error("<what>: <VkResult name>") unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

}  // namespace ls::vk
