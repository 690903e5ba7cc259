#pragma once
// What a physical device offers the engine, read once; printed by `lorastudio --devices`.
#include <cstdint>
#include <string>
#include <vector>

#include "vk/vulkan.h"

namespace ls::vk {

struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  std::string a, b, c, result;  // component types, e.g. "f16", "f32"
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
  // Vulkan 1.3's subgroup size control for compute pipelines (subgroupSizeControl, computeFullSubgroups, compute
  // among requiredSubgroupSizeStages): a pipeline may require any power of two from min to max.
  bool subgroup_size_control = false;
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;
  // Vulkan 1.3's maintenance4: a SPIR-V 1.6 module's workgroup size from specialization constants (LocalSizeId, as
  // glslang writes local_size_x_id for the cooperative-matrix-2 kernels, built for vulkan1.3) needs it enabled.
  bool maintenance4 = false;
  bool coopmat_nv = false;        // VK_NV_cooperative_matrix
  std::vector<CoopMatShape> coopmat_shapes;  // its subgroup-scope shapes
  bool coopmat_khr = false;       // VK_KHR_cooperative_matrix with its feature (Vulkan 1.3)
  std::vector<CoopMatShape> coopmat_khr_shapes;  // its subgroup-scope shapes
  // VK_NV_cooperative_matrix2 (with VK_KHR_cooperative_matrix) offering what the workgroup-scope GEMM
  // uses: workgroup scope, flexible dimensions, conversions, per-element operations and tensor addressing.
  bool coopmat2 = false;
  // The SMs (multiprocessors), from VK_NV_shader_sm_builtins' shaderSMCount; 0 where the driver does not say.
  uint32_t sm_count = 0;

  bool usable() const { return storage16 && int16 && api_version >= VK_API_VERSION_1_2; }
};

// Which subgroup-scope tensor-core kernels a device runs (shaders/matmul_coopmat.comp, flash_attention_coopmat.comp:
// f16 × f16 → f32 at 16×16×16 on subgroups of 32), through which extension.
enum class CoopmatApi { none, nv, khr };
struct CoopmatChoice {
  CoopmatApi api = CoopmatApi::none;
  // The KHR kernels' pipelines must require subgroups of 32 (the device's default size is another).
  bool require_subgroup_32 = false;
  bool operator==(const CoopmatChoice&) const = default;
};
// Whether GL_KHR_cooperative_matrix's kernels are chosen where a device offers that extension and not the NV
// one (AMD's GPUs). On since session 32: on an H200 through its KHR extension (LORASTUDIO_COOPMAT=khr,
// LORASTUDIO_NO_COOPMAT2=1; bench/device/s32b_khr_peers.sh) matmul_test (143), attention_test (105) and
// training_test (21) passed on the KHR kernels, as on the NV ones.
inline constexpr bool kKhrCoopmatByDefault = true;
// The choice for a device. `preference` is LORASTUDIO_COOPMAT's value: "khr" the KHR kernels wherever they can
// run (ahead of the NV ones: to test and measure them on NVIDIA GPUs), "nv" the NV kernels only, empty the NV
// kernels, else the KHR ones if kKhrCoopmatByDefault. `khr_built`: their kernels were built (glslang >= 14).
// Both need f16 arithmetic, the memory model and the 16×16×16 f16 × f16 → f32 shape at subgroup scope; the NV
// kernels a subgroup size of 32, the KHR ones 32 by default or by subgroup size control.
CoopmatChoice choose_coopmat(const DeviceReport& r, const std::string& preference, bool khr_built);

// Rank for the default choice: discrete > integrated > virtual > cpu > other.
int device_type_rank(const std::string& type);
DeviceReport read_device_report(VkInstance instance, VkPhysicalDevice physical, uint32_t index);
std::string format_report(const DeviceReport& r);
std::string version_string(uint32_t v);

}  // namespace ls::vk
