#pragma once
// What a physical device offers the engine, read once; printed by `lorastudio --devices`.
#include <cstdint>
#include <string>
#include <vector>

#include "vk/vulkan.h"

namespace ls::vk {

struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  std::string a, b, c;  // component types, e.g. "f16", "f32"
};

struct DeviceReport {
  uint32_t index = 0;
  std::string name;
  std::string type;  // discrete, integrated, virtual, cpu, other
  uint32_t api_version = 0;
  uint32_t driver_version = 0;
  uint32_t vendor_id = 0, device_id = 0;
  bool float16 = false;           // shaderFloat16
  bool storage16 = false;         // storageBuffer16BitAccess
  bool int16 = false;             // shaderInt16
  bool memory_model = false;      // vulkanMemoryModel
  bool memory_model_device_scope = false;  // vulkanMemoryModelDeviceScope (device-scope barriers and atomics)
  bool buffer_device_address = false;  // bufferDeviceAddress
  uint32_t subgroup_size = 0;
  uint32_t shared_memory = 0;     // maxComputeSharedMemorySize, bytes
  uint64_t max_storage_range = 0; // maxStorageBufferRange, bytes
  uint64_t storage_alignment = 0; // minStorageBufferOffsetAlignment
  uint64_t device_local_bytes = 0;
  bool memory_budget = false;     // VK_EXT_memory_budget (vk/memory_budget.h)
  bool timestamps = false;
  float timestamp_period_ns = 0;
  uint32_t queue_family = 0;      // the compute queue family the engine uses
  bool coopmat_nv = false;        // VK_NV_cooperative_matrix
  std::vector<CoopMatShape> coopmat_shapes;
  // VK_NV_cooperative_matrix2 (with VK_KHR_cooperative_matrix) offering what the workgroup-scope GEMM
  // uses: workgroup scope, flexible dimensions, conversions, per-element operations and tensor addressing.
  bool coopmat2 = false;
  // The SMs (multiprocessors), from VK_NV_shader_sm_builtins' shaderSMCount; 0 where the driver does not say.
  uint32_t sm_count = 0;

  bool usable() const { return storage16 && int16 && api_version >= VK_API_VERSION_1_2; }
};

// Rank for the default choice: discrete > integrated > virtual > cpu > other.
int device_type_rank(const std::string& type);
DeviceReport read_device_report(VkInstance instance, VkPhysicalDevice physical, uint32_t index);
std::string format_report(const DeviceReport& r);
std::string version_string(uint32_t v);

}  // namespace ls::vk
