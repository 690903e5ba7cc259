#include "vk/pipelines.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "error.h"
#include "util/atomic_file.h"

namespace ls::vk {

std::filesystem::path cache_directory() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "lorastudio";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "lorastudio";
  return {};
}

Pipelines::Pipelines(VkDevice device, std::filesystem::path cache_file, bool capture_stats, bool khr_subgroup_32,
                     bool executable_info)
    : device_(device), capture_stats_(capture_stats && executable_info), executable_info_(executable_info),
      khr_subgroup_32_(khr_subgroup_32),
      cache_file_(std::move(cache_file)) {
  std::vector<char> initial;
  if (!cache_file_.empty()) {
    std::ifstream in(cache_file_, std::ios::binary);
    if (in) initial.assign(std::istreambuf_iterator<char>(in), {});
  }
  VkPipelineCacheCreateInfo cinfo{.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                  .initialDataSize = initial.size(), .pInitialData = initial.data()};
  // A stale or foreign cache file is rejected by the driver's header check; start empty then.
  if (vkCreatePipelineCache(device_, &cinfo, nullptr, &cache_) != VK_SUCCESS) {
    cinfo.initialDataSize = 0;
    cinfo.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_, &cinfo, nullptr, &cache_), "vkCreatePipelineCache");
  }

  VkDescriptorSetLayoutBinding bindings[kMaxBindings];
  for (uint32_t i = 0; i < kMaxBindings; ++i)
    bindings[i] = {.binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1,
                   .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo sinfo{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                        .bindingCount = kMaxBindings, .pBindings = bindings};
  check(vkCreateDescriptorSetLayout(device_, &sinfo, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange push{.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = kMaxPushBytes};
  VkPipelineLayoutCreateInfo linfo{.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
                                   .pSetLayouts = &set_layout_, .pushConstantRangeCount = 1,
                                   .pPushConstantRanges = &push};
  check(vkCreatePipelineLayout(device_, &linfo, nullptr, &layout_), "vkCreatePipelineLayout");
}

Pipelines::~Pipelines() {
  save_cache();
  for (auto& [k, p] : pipelines_) vkDestroyPipeline(device_, p, nullptr);
  for (auto& [k, m] : modules_) vkDestroyShaderModule(device_, m, nullptr);
  vkDestroyPipelineLayout(device_, layout_, nullptr);
  vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  vkDestroyPipelineCache(device_, cache_, nullptr);
}

void Pipelines::save_cache() {
  if (cache_file_.empty() || pipelines_.empty()) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
  std::string data(size, '\0');
  if (vkGetPipelineCacheData(device_, cache_, &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  try {
    std::filesystem::create_directories(cache_file_.parent_path());
    write_file_atomically(cache_file_, data);
  } catch (const std::exception&) {
    // A cache that cannot be written only costs compile time on the next start.
  }
}

size_t Pipelines::created() const {
  std::lock_guard lock(mutex_);
  return pipelines_.size();
}

VkPipeline Pipelines::get(Kernel kernel, const Spec& spec) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(kernel, spec);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  VkPipeline pipeline = create(kernel, spec, capture_stats_);
  pipelines_[key] = pipeline;
  if (capture_stats_) {
    with_stats_.insert(key);
    print_stats(pipeline, kernel_info(kernel).name, spec);
  }
  return pipeline;
}

VkPipeline Pipelines::create(Kernel kernel, const Spec& spec, bool keep_stats) {
  const KernelInfo& info = kernel_info(kernel);
  if (info.word_count == 0)
    throw Error(std::string("kernel ") + info.name + " was not built (it needs glslang >= 14: scripts/glslang.sh)");
  VkShaderModule& module = modules_[kernel];
  if (!module) {
    VkShaderModuleCreateInfo minfo{.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = info.word_count * sizeof(uint32_t), .pCode = info.words};
    check(vkCreateShaderModule(device_, &minfo, nullptr, &module), info.name);
  }
  std::vector<uint32_t> values{spec.local_x};
  values.insert(values.end(), spec.constants.begin(), spec.constants.end());
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t i = 0; i < values.size(); ++i)
    entries.push_back({.constantID = i, .offset = i * 4, .size = 4});
  VkSpecializationInfo sinfo{.mapEntryCount = uint32_t(entries.size()), .pMapEntries = entries.data(),
                             .dataSize = values.size() * 4, .pData = values.data()};
  VkComputePipelineCreateInfo pinfo{
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module, .pName = "main", .pSpecializationInfo = &sinfo},
      .layout = layout_};
  if (keep_stats) pinfo.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup_32{
      .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO, .requiredSubgroupSize = 32};
  if (khr_subgroup_32_ && std::string_view(info.name).find("coopmat_khr") != std::string_view::npos) {
    pinfo.stage.pNext = &subgroup_32;
    pinfo.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(device_, cache_, 1, &pinfo, nullptr, &pipeline);
  if (r != VK_SUCCESS) throw Error(std::string("creating the pipeline for kernel ") + info.name + ": " + result_name(r));
  return pipeline;
}

namespace {
// Each executable's statistics of a pipeline created with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR (none where
// the driver gives none).
std::vector<std::vector<VkPipelineExecutableStatisticKHR>> executable_statistics(VkDevice device, VkPipeline pipeline) {
  std::vector<std::vector<VkPipelineExecutableStatisticKHR>> all;
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) return all;
  VkPipelineInfoKHR pinfo{.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
  uint32_t executables = 0;
  if (properties(device, &pinfo, &executables, nullptr) != VK_SUCCESS) return all;
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR einfo{.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline,
                                      .executableIndex = e};
    uint32_t count = 0;
    if (statistics(device, &einfo, &count, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(count, {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (statistics(device, &einfo, &count, stats.data()) != VK_SUCCESS) continue;
    all.push_back(std::move(stats));
  }
  return all;
}
}  // namespace

std::optional<uint32_t> Pipelines::registers(Kernel kernel, const Spec& spec) {
  if (!executable_info_) return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto key = std::make_pair(kernel, spec);
  if (auto it = registers_.find(key); it != registers_.end()) return it->second;
  // Statistics may be asked only of a pipeline created to keep them (VUID-vkGetPipelineExecutableStatisticsKHR-
  // pipeline-03274): the cached one where it did, a new one cached where none exists, else one of its own, dropped.
  VkPipeline pipeline = VK_NULL_HANDLE, own = VK_NULL_HANDLE;
  if (auto it = pipelines_.find(key); it == pipelines_.end()) {
    pipeline = pipelines_[key] = create(kernel, spec, true);
    with_stats_.insert(key);
  } else {
    pipeline = with_stats_.count(key) ? it->second : (own = create(kernel, spec, true));
  }
  std::optional<uint32_t> most;
  for (const auto& stats : executable_statistics(device_, pipeline))
    for (const auto& st : stats)
      if (std::string_view(st.name) == "Register Count" &&
          (st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR ||
           st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR)) {
        const uint64_t n = st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR ? st.value.u64
                                                                                           : uint64_t(std::max<int64_t>(0, st.value.i64));
        most = std::max<uint32_t>(most.value_or(0), uint32_t(std::min<uint64_t>(n, UINT32_MAX)));
      }
  if (own) vkDestroyPipeline(device_, own, nullptr);
  registers_[key] = most;
  return most;
}

// One line a pipeline executable: "pipeline stats: NAME [local_x c1 c2 ...]: statistic=value, ..."
void Pipelines::print_stats(VkPipeline pipeline, const char* name, const Spec& spec) const {
  std::string constants = std::to_string(spec.local_x);
  for (uint32_t c : spec.constants) constants += " " + std::to_string(c);
  for (const auto& stats : executable_statistics(device_, pipeline)) {
    std::string line = std::string("pipeline stats: ") + name + " [" + constants + "]:";
    for (const auto& st : stats) {
      line += std::string(" ") + st.name + "=";
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += st.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(st.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(st.value.u64); break;
        default: line += std::to_string(st.value.f64); break;
      }
      line += ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace ls::vk
