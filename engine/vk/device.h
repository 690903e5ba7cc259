#pragma once
// The engine's Vulkan device: created headless, created for a window (with the instance and device
// extensions the window needs and a queue that can present), or adopting a window's instance and device.
// One VkDevice serves the window and the engine. Owns memory, pipelines and the queue; submissions to
// the queue are serialised here because a VkQueue is externally synchronised.
//
// Sharing the one queue with a window (docs/design.md "Threads and queues"): engine submissions hold the
// queue mutex only for vkQueueSubmit and wait for their own fence outside it, so a window never waits for
// engine GPU work by taking the mutex. But on a device with one queue (lavapipe, many integrated GPUs) a
// frame submitted behind a long training step is presented late, and software presentation even waits
// for the frame's fence inside vkQueuePresentKHR. So the window submits through submit_for_window(),
// which runs its submit-and-present only while no engine work is on the queue; when some is, it returns
// false at once (the window skips presenting this frame and tries again next loop), and engine
// submissions that start within kClaimTimeout wait for the window's turn first.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vk/features.h"
#include "vk/memory.h"
#include "vk/memory_budget.h"
#include "vk/pipelines.h"
#include "vk/vulkan.h"

namespace ls::vk {

struct DeviceOptions {
  // Which physical device: a number from `lorastudio --devices` or a part of its name (case
  // insensitive). Empty: LORASTUDIO_DEVICE, else the best (discrete > integrated > cpu).
  std::string select;
  // VK_LAYER_KHRONOS_validation with a messenger; also on when LORASTUDIO_VALIDATION=1.
  bool validation = false;
  // Receives each validation message (default: printed to stderr). Counted in validation_messages().
  std::function<void(const std::string&)> on_validation_message;
  // Disk pipeline cache; empty path: the XDG cache directory. "-" disables it.
  std::string pipeline_cache = "";
  // Lower the binding limit below the device's maxStorageBufferRange (0: keep it). Tests use it to
  // exercise the split paths of big tensors on any device.
  uint64_t storage_range_limit = 0;
  // For a window on this device: the instance extensions it needs (glfwGetRequiredInstanceExtensions),
  // the device extensions (VK_KHR_swapchain), and whether a queue family of a physical device can present
  // to it (glfwGetPhysicalDevicePresentationSupport). With can_present set, the queue is of a family
  // with graphics, compute and presentation, and devices without one are not chosen.
  std::vector<std::string> instance_extensions, device_extensions;
  std::function<bool(VkInstance, VkPhysicalDevice, uint32_t family)> can_present;
};

// What the engine needs enabled on a VkDevice: Vulkan 1.2; storageBuffer16BitAccess and shaderInt16;
// shaderFloat16 and vulkanMemoryModel when offered; VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix with
// its feature where the tensor-core kernels run through it (vk::choose_coopmat). A window that creates the
// device itself chains features() into its VkDeviceCreateInfo, adds extensions, and hands the device to
// Device(const DeviceInit&).
class DeviceRequirements {
 public:
  DeviceRequirements(VkPhysicalDevice physical, const DeviceReport& report);
  DeviceRequirements(const DeviceRequirements&) = delete;  // the feature structs point at each other
  DeviceRequirements& operator=(const DeviceRequirements&) = delete;

  const std::vector<const char*>& extensions() const { return extensions_; }
  const VkPhysicalDeviceFeatures2* features() const { return &features_; }  // VkDeviceCreateInfo::pNext
  // The tensor-core kernels (f16 16x16x16, subgroups of 32) can run on a device created with these
  // (LORASTUDIO_NO_COOPMAT=1 turns them off), through VK_NV_cooperative_matrix or, where coopmat_khr(),
  // VK_KHR_cooperative_matrix (vk::choose_coopmat; LORASTUDIO_COOPMAT=khr prefers it).
  bool coopmat() const { return coopmat_; }
  bool coopmat_khr() const { return coopmat_khr_; }
  // The KHR kernels' pipelines require subgroups of 32, which is not the device's default size.
  bool subgroup_32() const { return subgroup_32_; }
  // The workgroup-scope tensor-core GEMM (VK_NV_cooperative_matrix2, shaders/matmul_coopmat2.comp) runs:
  // the device offers it and its kernels were built (a glslang >= 14); LORASTUDIO_NO_COOPMAT2=1 turns it off.
  bool coopmat2() const { return coopmat2_; }
  // VK_KHR_pipeline_executable_properties is on (wherever the device offers it): a pipeline's compiler statistics
  // can be read (vk::Pipelines::registers).
  bool executable_info() const { return executable_info_; }
  // And LORASTUDIO_PIPELINE_STATS=1: every pipeline's statistics (registers, shared memory, ...) go to stderr as it
  // is created.
  bool pipeline_stats() const { return pipeline_stats_; }

 private:
  std::vector<const char*> extensions_;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_{};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_{};
  CooperativeMatrixFeaturesKhr coop_khr_{};
  CooperativeMatrix2FeaturesNv coop2_{};
  VkPhysicalDeviceVulkan13Features f13_{};
  VkPhysicalDeviceVulkan12Features f12_{};
  VkPhysicalDeviceVulkan11Features f11_{};
  VkPhysicalDeviceFeatures2 features_{};
  bool coopmat_ = false;
  bool coopmat_khr_ = false;
  bool subgroup_32_ = false;
  bool coopmat2_ = false;
  bool executable_info_ = false;
  bool pipeline_stats_ = false;
};

// The objects a window already created, for Device to adopt without owning them. The device must have
// been created with DeviceRequirements(physical, report) (features chained, extensions enabled).
struct DeviceInit {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  // Called around each submit when the window shares this queue and must serialise with us.
  std::mutex* queue_mutex = nullptr;
};

class Device {
 public:
  explicit Device(const DeviceOptions& options = {});
  explicit Device(const DeviceInit& init);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return report_.queue_family; }
  // Every vkQueueSubmit / vkQueuePresentKHR on queue() holds this mutex (a window's too).
  std::mutex& queue_mutex() { return *queue_mutex_; }
  const DeviceReport& report() const { return report_; }
  Memory& memory() { return *memory_; }
  const Memory& memory() const { return *memory_; }
  Pipelines& pipelines() { return *pipelines_; }
  // VK_KHR_pipeline_executable_properties is enabled (wherever offered): Pipelines::registers can answer.
  bool executable_info() const { return executable_info_; }

  // Submits and blocks until the GPU is done (the queue mutex is held for the submit only). Safe from
  // several threads at once. Throws ls::Error on failure or device loss.
  void submit_and_wait(VkCommandBuffer cb);

  // The window's turn on the queue (see the top of this file): calls submit(queue()) with the queue
  // mutex held and returns true when no engine work is on the queue; otherwise returns false at once.
  static constexpr std::chrono::milliseconds kClaimTimeout{100};
  bool submit_for_window(const std::function<void(VkQueue)>& submit);
  // Engine submissions are on the queue (submitted, not yet waited for).
  bool engine_busy() const { return in_flight_.load() > 0; }

  // Host <-> device copies of raw bytes; both block until done.
  void write(const Allocation& dst, VkDeviceSize offset, const void* data, VkDeviceSize size);
  void read(const Allocation& src, VkDeviceSize offset, void* data, VkDeviceSize size);

  size_t validation_messages() const { return validation_messages_.load(); }
  // Tensor-core kernels (f16 16x16x16, subgroups of 32) are usable: through VK_NV_cooperative_matrix, or
  // where coopmat_khr(), their VK_KHR_cooperative_matrix rows (DeviceRequirements). LORASTUDIO_NO_COOPMAT=1
  // turns them off (to compare with the scalar path).
  bool coopmat() const { return coopmat_; }
  bool coopmat_khr() const { return coopmat_khr_; }
  // The workgroup-scope GEMM of VK_NV_cooperative_matrix2 is usable (DeviceRequirements::coopmat2).
  bool coopmat2() const { return coopmat2_; }
  // The device-local memory this process may still take: the heaps, the driver's budget where the device
  // offers VK_EXT_memory_budget, and what this process holds now (vk/memory_budget.h). Read anew each call.
  MemoryBudget memory_budget() const;

 private:
  void release();
  void create_logical_device(const DeviceOptions& options);
  VkFence take_fence();
  void return_fence(VkFence fence);
  void finish_setup(const std::string& cache);
  void copy(const Allocation& src, VkDeviceSize src_offset, const Allocation& dst, VkDeviceSize dst_offset,
            VkDeviceSize size);
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                          VkDebugUtilsMessageTypeFlagsEXT,
                                                          const VkDebugUtilsMessengerCallbackDataEXT*, void*);

  bool owns_ = true;
  bool coopmat_ = false;
  bool coopmat_khr_ = false;
  bool subgroup_32_ = false;
  bool coopmat2_ = false;
  bool executable_info_ = false;
  bool pipeline_stats_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  DeviceReport report_;
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<Pipelines> pipelines_;
  std::mutex own_queue_mutex_;
  std::mutex* queue_mutex_ = &own_queue_mutex_;
  std::condition_variable_any claim_released_;
  bool claimed_ = false;            // the window waits for the queue; guarded by the queue mutex
  std::chrono::steady_clock::time_point claimed_at_;
  std::atomic<int> in_flight_{0};
  std::mutex fence_mutex_;
  std::vector<VkFence> free_fences_, all_fences_;
  std::mutex transfer_mutex_;
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  std::function<void(const std::string&)> on_validation_message_;
  std::atomic<size_t> validation_messages_{0};
};

// The tensor-core kernels a device created now runs: the subgroup-scope ones through the NV or the KHR extension
// (choose_coopmat with LORASTUDIO_COOPMAT's value; none with LORASTUDIO_NO_COOPMAT=1), and the workgroup-scope GEMM
// of VK_NV_cooperative_matrix2 where the device offers it, its kernels were built and LORASTUDIO_NO_COOPMAT2 is unset.
struct TensorCores {
  CoopmatChoice subgroup;
  bool cm2 = false;
};
TensorCores tensor_cores_for(const DeviceReport& report);
// One line for --devices, e.g. "VK_NV_cooperative_matrix2's GEMM, VK_NV_cooperative_matrix (16x16x16 f16)".
std::string describe(const TensorCores& t);

// Every physical device the loader sees, with its report (a temporary instance is created).
std::vector<DeviceReport> list_devices();
// Index of the device `select` names among `devices` (see DeviceOptions::select). Throws if none.
uint32_t choose_device(const std::vector<DeviceReport>& devices, const std::string& select);

}  // namespace ls::vk
