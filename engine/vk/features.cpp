#include "vk/features.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "error.h"

namespace ls::vk {

namespace {

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

const char* component_name(VkComponentTypeNV t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV: return "i8";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "i32";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return "?";
  }
}

bool has_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, exts.data());
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

int device_type_rank(const std::string& type) {
  if (type == "discrete") return 4;
  if (type == "integrated") return 3;
  if (type == "virtual") return 2;
  if (type == "cpu") return 1;
  return 0;
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

DeviceReport read_device_report(VkInstance instance, VkPhysicalDevice physical, uint32_t index) {
  DeviceReport r;
  r.index = index;

  VkPhysicalDeviceSubgroupProperties subgroup{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &subgroup};
  vkGetPhysicalDeviceProperties2(physical, &props);
  const auto& p = props.properties;
  r.name = p.deviceName;
  r.type = type_name(p.deviceType);
  r.api_version = p.apiVersion;
  r.driver_version = p.driverVersion;
  r.vendor_id = p.vendorID;
  r.device_id = p.deviceID;
  r.subgroup_size = subgroup.subgroupSize;
  if (p.apiVersion >= VK_API_VERSION_1_3) {
    VkPhysicalDeviceVulkan13Properties p13{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
    VkPhysicalDeviceProperties2 with_13{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p13};
    vkGetPhysicalDeviceProperties2(physical, &with_13);
    VkPhysicalDeviceVulkan13Features f13{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceFeatures2 f{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f13};
    vkGetPhysicalDeviceFeatures2(physical, &f);
    r.subgroup_size_control = f13.subgroupSizeControl && f13.computeFullSubgroups &&
                              (p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    r.maintenance4 = f13.maintenance4;
    r.min_subgroup_size = p13.minSubgroupSize;
    r.max_subgroup_size = p13.maxSubgroupSize;
  }
  r.shared_memory = p.limits.maxComputeSharedMemorySize;
  r.max_storage_range = p.limits.maxStorageBufferRange;
  r.storage_alignment = p.limits.minStorageBufferOffsetAlignment;
  r.timestamp_period_ns = p.limits.timestampPeriod;

  if (p.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceVulkan12Features f12{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
    VkPhysicalDeviceFeatures2 f{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    vkGetPhysicalDeviceFeatures2(physical, &f);
    r.float16 = f12.shaderFloat16;
    r.storage16 = f11.storageBuffer16BitAccess;
    r.int16 = f.features.shaderInt16;
    r.memory_model = f12.vulkanMemoryModel;
    r.memory_model_device_scope = f12.vulkanMemoryModel && f12.vulkanMemoryModelDeviceScope;
    r.buffer_device_address = f12.bufferDeviceAddress;
  }

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> queues(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, queues.data());
  // Prefer a compute-only family (async compute); otherwise any family with compute.
  int chosen = -1;
  for (uint32_t i = 0; i < nq; ++i) {
    bool compute = queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT;
    bool graphics = queues[i].queueFlags & VK_QUEUE_GRAPHICS_BIT;
    if (compute && !graphics && queues[i].timestampValidBits > 0) { chosen = int(i); break; }
  }
  for (uint32_t i = 0; chosen < 0 && i < nq; ++i)
    if (queues[i].queueFlags & VK_QUEUE_COMPUTE_BIT) chosen = int(i);
  r.queue_family = chosen < 0 ? 0 : uint32_t(chosen);
  r.timestamps = chosen >= 0 && queues[r.queue_family].timestampValidBits > 0 && p.limits.timestampPeriod > 0;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) r.device_local_bytes += mem.memoryHeaps[i].size;
  r.memory_budget = has_extension(physical, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (has_extension(physical, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 with_sm{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sm};
    vkGetPhysicalDeviceProperties2(physical, &with_sm);
    r.sm_count = sm.shaderSMCount;
  }

  if (has_extension(physical, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    r.coopmat_nv = true;
    auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    if (fn) {
      uint32_t n = 0;
      fn(physical, &n, nullptr);
      std::vector<VkCooperativeMatrixPropertiesNV> shapes(n, {.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      fn(physical, &n, shapes.data());
      for (const auto& s : shapes)
        if (s.scope == VK_SCOPE_SUBGROUP_NV)
          r.coopmat_shapes.push_back({s.MSize, s.NSize, s.KSize, component_name(s.AType), component_name(s.BType),
                                      component_name(s.CType), component_name(s.DType)});
    }
  }
  if (p.apiVersion >= VK_API_VERSION_1_3 && has_extension(physical, kKhrCooperativeMatrixExtension)) {
    CooperativeMatrixFeaturesKhr cm;
    VkPhysicalDeviceFeatures2 f{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cm};
    vkGetPhysicalDeviceFeatures2(physical, &f);
    auto fn = reinterpret_cast<PfnCooperativeMatrixPropertiesKhr>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    r.coopmat_khr = cm.cooperativeMatrix && fn;
    if (r.coopmat_khr) {
      uint32_t n = 0;
      fn(physical, &n, nullptr);
      std::vector<CooperativeMatrixPropertiesKhr> shapes(n);
      fn(physical, &n, shapes.data());
      for (const auto& s : shapes)
        if (s.scope == VK_SCOPE_SUBGROUP_NV)
          r.coopmat_khr_shapes.push_back({s.MSize, s.NSize, s.KSize, component_name(s.AType),
                                          component_name(s.BType), component_name(s.CType),
                                          component_name(s.ResultType)});
    }
  }
  if (p.apiVersion >= VK_API_VERSION_1_3 && has_extension(physical, kKhrCooperativeMatrixExtension) &&
      has_extension(physical, kNvCooperativeMatrix2Extension)) {
    CooperativeMatrix2FeaturesNv cm2;
    CooperativeMatrixFeaturesKhr cm{.pNext = &cm2};
    VkPhysicalDeviceFeatures2 f{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cm};
    vkGetPhysicalDeviceFeatures2(physical, &f);
    r.coopmat2 = cm.cooperativeMatrix && cm2.cooperativeMatrixWorkgroupScope && cm2.cooperativeMatrixFlexibleDimensions &&
                 cm2.cooperativeMatrixConversions && cm2.cooperativeMatrixPerElementOperations &&
                 cm2.cooperativeMatrixTensorAddressing;
  }
  return r;
}

CoopmatChoice choose_coopmat(const DeviceReport& r, const std::string& preference, bool khr_built) {
  if (!preference.empty() && preference != "nv" && preference != "khr")
    throw Error("LORASTUDIO_COOPMAT must be nv or khr, not '" + preference + "'");
  auto has_16x16x16 = [](const std::vector<CoopMatShape>& shapes) {
    return std::any_of(shapes.begin(), shapes.end(), [](const CoopMatShape& s) {
      return s.m == 16 && s.n == 16 && s.k == 16 && s.a == "f16" && s.b == "f16" && s.c == "f32" && s.result == "f32";
    });
  };
  if (!r.float16 || !r.memory_model) return {};
  const bool nv = r.coopmat_nv && r.subgroup_size == 32 && has_16x16x16(r.coopmat_shapes);
  const bool size_32 = r.subgroup_size == 32 ||
                       (r.subgroup_size_control && r.min_subgroup_size <= 32 && r.max_subgroup_size >= 32);
  const bool khr = r.coopmat_khr && r.api_version >= VK_API_VERSION_1_3 && khr_built && size_32 &&
                   has_16x16x16(r.coopmat_khr_shapes);
  const CoopmatChoice by_khr{.api = CoopmatApi::khr, .require_subgroup_32 = r.subgroup_size != 32};
  if (preference == "khr" && khr) return by_khr;
  if (nv) return {.api = CoopmatApi::nv};
  if (preference.empty() && kKhrCoopmatByDefault && khr) return by_khr;
  return {};
}

std::string format_report(const DeviceReport& r) {
  std::ostringstream o;
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  o << "device " << r.index << ": " << r.name << " (" << r.type << ")\n"
    << "  Vulkan " << version_string(r.api_version) << ", vendor 0x" << std::hex << r.vendor_id << std::dec
    << ", compute queue family " << r.queue_family << "\n"
    << "  float16 arithmetic: " << yes(r.float16) << ", 16-bit storage: " << yes(r.storage16)
    << ", int16: " << yes(r.int16) << ", memory model: " << yes(r.memory_model) << "\n"
    << "  subgroup size: " << r.subgroup_size << ", shared memory: " << r.shared_memory / 1024 << " KiB"
    << ", maxStorageBufferRange: " << r.max_storage_range / (1024 * 1024) << " MiB"
    << ", device-local memory: " << r.device_local_bytes / (1024 * 1024) << " MiB\n"
    << "  timestamps: " << yes(r.timestamps);
  if (r.timestamps) o << " (" << r.timestamp_period_ns << " ns/tick)";
  o << "\n  VK_NV_cooperative_matrix: " << yes(r.coopmat_nv);
  if (!r.coopmat_shapes.empty()) {
    o << " —";
    for (const auto& s : r.coopmat_shapes)
      o << " " << s.m << "x" << s.n << "x" << s.k << " " << s.a << "*" << s.b << "->" << s.c << ";";
  }
  o << "\n  VK_KHR_cooperative_matrix: " << yes(r.coopmat_khr);
  if (!r.coopmat_khr_shapes.empty()) {
    o << " —";
    for (const auto& s : r.coopmat_khr_shapes)
      o << " " << s.m << "x" << s.n << "x" << s.k << " " << s.a << "*" << s.b << "+" << s.c << "->" << s.result << ";";
  }
  if (r.subgroup_size_control)
    o << "\n  subgroup sizes a pipeline may require: " << r.min_subgroup_size << " to " << r.max_subgroup_size;
  o << "\n  VK_NV_cooperative_matrix2 (workgroup scope, tensor addressing): " << yes(r.coopmat2);
  if (r.sm_count) o << ", " << r.sm_count << " SMs";
  o << "\n  usable by lorastudio: " << yes(r.usable());
  if (!r.usable()) o << " (needs Vulkan 1.2, 16-bit storage buffers and shaderInt16)";
  o << "\n";
  return o.str();
}

}  // namespace ls::vk
