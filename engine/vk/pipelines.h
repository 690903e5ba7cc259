#pragma once
// Compute pipelines by (kernel, specialization constants), created lazily on first use and kept for
// the device's lifetime. Every kernel shares one layout: set 0 with kMaxBindings storage buffers and
// kMaxPushBytes of push constants. A VkPipelineCache persists on disk (XDG cache directory, keyed by
// device and driver) so the driver compiles each kernel once per machine, not once per start.
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "kernels.h"
#include "vk/vulkan.h"

namespace ls::vk {

constexpr uint32_t kMaxBindings = 24;  // decode_layer.comp has the most
constexpr uint32_t kMaxPushBytes = 128;

// Specialization constants: id 0 is the workgroup's x size (local_size_x_id = 0); ids 1.. follow.
struct Spec {
  uint32_t local_x = 256;
  std::vector<uint32_t> constants;  // ids 1, 2, ...
  auto operator<=>(const Spec&) const = default;
};

class Pipelines {
 public:
  // executable_info: VK_KHR_pipeline_executable_properties is enabled, so registers() can read a pipeline's
  // statistics; capture_stats: each new pipeline's statistics also go to stderr (measurement,
  // LORASTUDIO_PIPELINE_STATS=1). khr_subgroup_32: the pipelines of the
  // GL_KHR_cooperative_matrix kernels (*coopmat_khr*, written for subgroups of 32) require full subgroups of 32
  // (Vulkan 1.3's subgroupSizeControl and computeFullSubgroups are enabled).
  Pipelines(VkDevice device, std::filesystem::path cache_file, bool capture_stats = false,
            bool khr_subgroup_32 = false, bool executable_info = false);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  VkPipeline get(Kernel kernel, const Spec& spec);
  // The registers an invocation of the kernel's pipeline takes, as the driver reports them (NVIDIA's "Register
  // Count" statistic), or none where it does not say (no executable_info, or another driver's statistics). Creates
  // the pipeline, with its statistics kept, if it does not exist; where it was created without them, reads a second
  // one made to keep them. Remembered: the next call for the same pipeline asks the driver nothing.
  std::optional<uint32_t> registers(Kernel kernel, const Spec& spec);
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  size_t created() const;

 private:
  void save_cache();
  // A new pipeline (not cached; the caller holds mutex_), keeping its statistics where asked.
  VkPipeline create(Kernel kernel, const Spec& spec, bool keep_stats);
  void print_stats(VkPipeline pipeline, const char* name, const Spec& spec) const;
  VkDevice device_;
  bool capture_stats_ = false;
  bool executable_info_ = false;
  bool khr_subgroup_32_ = false;
  std::filesystem::path cache_file_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  std::map<std::pair<Kernel, Spec>, VkPipeline> pipelines_;
  std::set<std::pair<Kernel, Spec>> with_stats_;  // those of pipelines_ created to keep their statistics
  std::map<std::pair<Kernel, Spec>, std::optional<uint32_t>> registers_;
  std::map<Kernel, VkShaderModule> modules_;
};

// $XDG_CACHE_HOME/lorastudio (or ~/.cache/lorastudio); empty if neither is set.
std::filesystem::path cache_directory();

}  // namespace ls::vk
