#pragma once
// The engine's Vulkan device: created headless, or adopting the window's instance and device (the GUI
// hands its own in, so one VkDevice serves both). Owns memory, pipelines and the queue; submissions to
// the queue are serialised here because a VkQueue is externally synchronised.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vk/features.h"
#include "vk/memory.h"
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
};

// The objects a window already created, for Device to adopt without owning them.
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
  uint32_t queue_family() const { return report_.queue_family; }
  const DeviceReport& report() const { return report_; }
  Memory& memory() { return *memory_; }
  Pipelines& pipelines() { return *pipelines_; }

  // Submits and blocks until the GPU is done. Throws ls::Error on failure or device loss.
  void submit_and_wait(VkCommandBuffer cb);
  // Host <-> device copies of raw bytes; both block until done.
  void write(const Allocation& dst, VkDeviceSize offset, const void* data, VkDeviceSize size);
  void read(const Allocation& src, VkDeviceSize offset, void* data, VkDeviceSize size);

  size_t validation_messages() const { return validation_messages_.load(); }
  // Tensor-core kernels (VK_NV_cooperative_matrix, f16 16x16x16, subgroups of 32) are usable.
  // LORASTUDIO_NO_COOPMAT=1 turns them off (to compare with the scalar path).
  bool coopmat() const { return coopmat_; }

 private:
  void release();
  void create_logical_device();
  void finish_setup(const std::string& cache);
  void copy(const Allocation& src, VkDeviceSize src_offset, const Allocation& dst, VkDeviceSize dst_offset,
            VkDeviceSize size);
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                          VkDebugUtilsMessageTypeFlagsEXT,
                                                          const VkDebugUtilsMessengerCallbackDataEXT*, void*);

  bool owns_ = true;
  bool coopmat_ = false;
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
  std::mutex transfer_mutex_;
  VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::function<void(const std::string&)> on_validation_message_;
  std::atomic<size_t> validation_messages_{0};
};

// Every physical device the loader sees, with its report (a temporary instance is created).
std::vector<DeviceReport> list_devices();
// Index of the device `select` names among `devices` (see DeviceOptions::select). Throws if none.
uint32_t choose_device(const std::vector<DeviceReport>& devices, const std::string& select);

}  // namespace ls::vk
