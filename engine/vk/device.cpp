#include "vk/device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "error.h"
#include "kernels.h"
#include "vk/device_lost.h"

namespace ls::vk {

namespace {

// Submissions left before the simulated device loss (simulate_device_loss_after); -1: none simulated.
std::atomic<int64_t> g_submits_before_loss{-1};

// Whether this submission meets the simulated lost device (and, once lost, every one after it).
bool simulated_loss_now() {
  int64_t left = g_submits_before_loss.load();
  while (left > 0 && !g_submits_before_loss.compare_exchange_weak(left, left - 1)) {
  }
  return left == 0;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool device_has_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

VkInstance create_instance(bool validation, const std::vector<std::string>& extra_extensions = {}) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw Error("the Vulkan loader is version " + version_string(loader_version) + "; lorastudio needs 1.2 or newer");
  VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "lorastudio",
                        .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0), .pEngineName = "lorastudio",
                        .engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
                        .apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3)};
  std::vector<const char*> layers, extensions;
  for (const auto& e : extra_extensions) extensions.push_back(e.c_str());
  if (validation) {
    if (!has_layer("VK_LAYER_KHRONOS_validation"))
      throw Error("validation was asked for but VK_LAYER_KHRONOS_validation is not installed "
                  "(apt-get install vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo info{.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app,
                            .enabledLayerCount = uint32_t(layers.size()), .ppEnabledLayerNames = layers.data(),
                            .enabledExtensionCount = uint32_t(extensions.size()),
                            .ppEnabledExtensionNames = extensions.data()};
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&info, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error("no Vulkan driver found (install mesa-vulkan-drivers for a CPU device, or your GPU's driver)");
  if (r == VK_ERROR_EXTENSION_NOT_PRESENT && !extra_extensions.empty()) {
    std::string names;
    for (const auto& e : extra_extensions) names += (names.empty() ? "" : ", ") + e;
    throw Error("the Vulkan loader lacks an instance extension the window needs (" + names + ")");
  }
  check(r, "vkCreateInstance");
  return instance;
}

uint32_t queue_timestamp_bits(VkPhysicalDevice physical, uint32_t family) {
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> queues(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, queues.data());
  return family < nq ? queues[family].timestampValidBits : 0;
}

// A queue family with graphics, compute and presentation to the window, or -1.
int window_queue_family(VkInstance instance, VkPhysicalDevice physical, const DeviceOptions& options) {
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> queues(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, queues.data());
  const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
  for (uint32_t i = 0; i < nq; ++i)
    if ((queues[i].queueFlags & need) == need && options.can_present(instance, physical, i)) return int(i);
  return -1;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devs(n);
  check(vkEnumeratePhysicalDevices(instance, &n, devs.data()), "vkEnumeratePhysicalDevices");
  return devs;
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<DeviceReport> list_devices() {
  VkInstance instance = create_instance(false);
  std::vector<DeviceReport> out;
  try {
    auto devs = physical_devices(instance);
    for (uint32_t i = 0; i < devs.size(); ++i) out.push_back(read_device_report(instance, devs[i], i));
  } catch (...) {
    vkDestroyInstance(instance, nullptr);
    throw;
  }
  vkDestroyInstance(instance, nullptr);
  return out;
}

uint32_t choose_device(const std::vector<DeviceReport>& devices, const std::string& select) {
  if (devices.empty()) throw Error("no Vulkan device found (install mesa-vulkan-drivers for a CPU device)");
  std::string names;
  for (const auto& d : devices) names += "\n  " + std::to_string(d.index) + ": " + d.name + " (" + d.type + ")";
  if (!select.empty()) {
    bool numeric = std::all_of(select.begin(), select.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    for (const auto& d : devices) {
      bool match = numeric ? std::to_string(d.index) == select : lower(d.name).find(lower(select)) != std::string::npos;
      if (!match) continue;
      if (!d.usable()) throw Error("device " + select + " (" + d.name + ") lacks 16-bit storage, shaderInt16 or Vulkan 1.2");
      return d.index;
    }
    throw Error("no Vulkan device matches '" + select + "'; the devices are:" + names);
  }
  const DeviceReport* best = nullptr;
  for (const auto& d : devices)
    if (d.usable() && (!best || device_type_rank(d.type) > device_type_rank(best->type))) best = &d;
  if (!best) throw Error("no Vulkan device has what lorastudio needs (Vulkan 1.2, 16-bit storage, shaderInt16):" + names);
  return best->index;
}

Device::Device(const DeviceOptions& options) : on_validation_message_(options.on_validation_message) {
  bool validation = options.validation || env_flag("LORASTUDIO_VALIDATION");
  instance_ = create_instance(validation, options.instance_extensions);
  try {
    if (validation) {
      VkDebugUtilsMessengerCreateInfoEXT minfo{
          .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
          .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
          .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
          .pfnUserCallback = &Device::on_debug_message,
          .pUserData = this};
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
      if (!create) throw Error("VK_EXT_debug_utils is missing though the validation layer is present");
      check(create(instance_, &minfo, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
    auto devs = physical_devices(instance_);
    // For a window, only devices with a queue that computes, draws and presents to it are candidates.
    std::vector<DeviceReport> reports, candidates;
    std::vector<int> window_families;
    for (uint32_t i = 0; i < devs.size(); ++i) {
      reports.push_back(read_device_report(instance_, devs[i], i));
      window_families.push_back(options.can_present ? window_queue_family(instance_, devs[i], options) : 0);
      if (window_families.back() >= 0) candidates.push_back(reports.back());
    }
    if (candidates.empty() && !reports.empty())
      throw Error("no Vulkan device has a queue that can compute, draw and present to the window");
    std::string select = options.select;
    if (select.empty())
      if (const char* e = std::getenv("LORASTUDIO_DEVICE")) select = e;
    const uint32_t index = choose_device(candidates, select);
    physical_ = devs[index];
    report_ = reports[index];
    if (options.can_present) {
      report_.queue_family = uint32_t(window_families[index]);
      report_.timestamps = report_.timestamp_period_ns > 0 && queue_timestamp_bits(physical_, report_.queue_family) > 0;
    }
    if (options.storage_range_limit && options.storage_range_limit < report_.max_storage_range)
      report_.max_storage_range = options.storage_range_limit;
    create_logical_device(options);
    finish_setup(options.pipeline_cache);
  } catch (...) {
    release();
    throw;
  }
}

Device::Device(const DeviceInit& init) : owns_(false) {
  instance_ = init.instance;
  physical_ = init.physical;
  device_ = init.device;
  queue_ = init.queue;
  if (init.queue_mutex) queue_mutex_ = init.queue_mutex;
  auto devs = physical_devices(instance_);
  uint32_t index = 0;
  for (uint32_t i = 0; i < devs.size(); ++i)
    if (devs[i] == physical_) index = i;
  report_ = read_device_report(instance_, physical_, index);
  report_.queue_family = init.queue_family;
  report_.timestamps = report_.timestamp_period_ns > 0 && queue_timestamp_bits(physical_, report_.queue_family) > 0;
  if (!report_.usable()) throw Error("device " + report_.name + " lacks 16-bit storage, shaderInt16 or Vulkan 1.2");
  const DeviceRequirements needs(physical_, report_);
  coopmat_ = needs.coopmat();
  coopmat_khr_ = needs.coopmat_khr();
  subgroup_32_ = needs.subgroup_32();
  coopmat2_ = needs.coopmat2();
  pipeline_stats_ = needs.pipeline_stats();
  executable_info_ = needs.executable_info();
  finish_setup("");
}

DeviceRequirements::DeviceRequirements(VkPhysicalDevice physical, const DeviceReport& report) {
  coop_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  f12_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f11_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12_};
  features_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11_};
  f11_.storageBuffer16BitAccess = VK_TRUE;
  f12_.shaderFloat16 = report.float16;
  // Where offered: a pipeline's registers decide how many of the persistent decode layer's workgroups an SM holds
  // (ops/decode_layer.cpp), and LORASTUDIO_PIPELINE_STATS=1 prints every pipeline's statistics (measurement).
  if (device_has_extension(physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    extensions_.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    executable_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
                   .pNext = &f11_, .pipelineExecutableInfo = VK_TRUE};
    features_.pNext = &executable_;
    executable_info_ = true;
    pipeline_stats_ = env_flag("LORASTUDIO_PIPELINE_STATS");
  }
  f12_.vulkanMemoryModel = report.memory_model;
  f12_.vulkanMemoryModelDeviceScope = report.memory_model_device_scope;
  features_.features.shaderInt16 = VK_TRUE;
  // Only read (vk/memory_budget.h); enabled so that reading its properties is valid use.
  if (report.memory_budget) extensions_.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  // Each further feature struct goes to the end of the chain that starts at features_.
  void** tail = &f12_.pNext;
  auto chain = [&tail](auto& feature) {
    *tail = &feature;
    tail = &feature.pNext;
  };
  const TensorCores cores = tensor_cores_for(report);
  const CoopmatChoice choice = cores.subgroup;
  coopmat_ = choice.api != CoopmatApi::none;
  coopmat_khr_ = choice.api == CoopmatApi::khr;
  subgroup_32_ = choice.require_subgroup_32;
  if (choice.api == CoopmatApi::nv) {
    extensions_.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    coop_.cooperativeMatrix = VK_TRUE;
    chain(coop_);
  }
  coopmat2_ = cores.cm2;
  if (coopmat_khr_ || coopmat2_) {
    extensions_.push_back(kKhrCooperativeMatrixExtension);
    coop_khr_.cooperativeMatrix = VK_TRUE;
    chain(coop_khr_);
  }
  if (coopmat2_) {
    f12_.bufferDeviceAddress = VK_TRUE;
    extensions_.push_back(kNvCooperativeMatrix2Extension);
    coop2_ = {.pNext = nullptr, .cooperativeMatrixWorkgroupScope = VK_TRUE, .cooperativeMatrixFlexibleDimensions = VK_TRUE,
              .cooperativeMatrixConversions = VK_TRUE, .cooperativeMatrixPerElementOperations = VK_TRUE,
              .cooperativeMatrixTensorAddressing = VK_TRUE};
    chain(coop2_);
  }
  if (subgroup_32_ || coopmat2_) {
    f13_ = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    if (subgroup_32_) {  // the KHR kernels' pipelines require subgroups of 32 (Pipelines)
      f13_.subgroupSizeControl = VK_TRUE;
      f13_.computeFullSubgroups = VK_TRUE;
    }
    f13_.maintenance4 = coopmat2_;  // the cooperative-matrix-2 kernels' LocalSizeId (tensor_cores_for checked it)
    chain(f13_);
  }
}

TensorCores tensor_cores_for(const DeviceReport& report) {
  if (env_flag("LORASTUDIO_NO_COOPMAT")) return {};
  const char* preference = std::getenv("LORASTUDIO_COOPMAT");
  TensorCores t{.subgroup = choose_coopmat(report, preference ? preference : "",
                                           kernel_built(Kernel::gemm_coopmat_khr_f16_f16_f32))};
  // On wherever the device offers it and its kernels were built; LORASTUDIO_NO_COOPMAT2=1 keeps the
  // subgroup-scope kernels (the workgroup-scope GEMM is faster: bench/RESULTS.md, session 9).
  // bufferDeviceAddress too: the quantized weights' decode function takes a pointer to a block
  // (shaders/matmul_coopmat2.comp, the PhysicalStorageBufferAddresses capability).
  // maintenance4 too: those kernels are SPIR-V 1.6 with their workgroup size from specialization constants.
  t.cm2 = t.subgroup.api != CoopmatApi::none && report.coopmat2 && report.buffer_device_address && report.maintenance4 &&
          kernel_built(Kernel::gemm_cm2_m_f16_f16_f32) && !env_flag("LORASTUDIO_NO_COOPMAT2");
  return t;
}

std::string describe(const TensorCores& t) {
  std::string line;
  if (t.cm2) line = "VK_NV_cooperative_matrix2's GEMM and flash attention, else ";
  switch (t.subgroup.api) {
    case CoopmatApi::none: return "none (the scalar kernels)";
    case CoopmatApi::nv: return line + "VK_NV_cooperative_matrix (16x16x16 f16, subgroups of 32)";
    case CoopmatApi::khr:
      return line + "VK_KHR_cooperative_matrix (16x16x16 f16, subgroups of 32" +
             (t.subgroup.require_subgroup_32 ? ", required by each pipeline)" : ")");
  }
  return line;
}

void Device::create_logical_device(const DeviceOptions& options) {
  if (!report_.usable()) throw Error("device " + report_.name + " lacks 16-bit storage, shaderInt16 or Vulkan 1.2");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qinfo{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                .queueFamilyIndex = report_.queue_family, .queueCount = 1,
                                .pQueuePriorities = &priority};
  const DeviceRequirements needs(physical_, report_);
  coopmat_ = needs.coopmat();
  coopmat_khr_ = needs.coopmat_khr();
  subgroup_32_ = needs.subgroup_32();
  coopmat2_ = needs.coopmat2();
  pipeline_stats_ = needs.pipeline_stats();
  executable_info_ = needs.executable_info();
  std::vector<const char*> extensions = needs.extensions();
  for (const auto& e : options.device_extensions) {
    if (!device_has_extension(physical_, e.c_str())) throw Error("device " + report_.name + " lacks " + e);
    extensions.push_back(e.c_str());
  }
  VkDeviceCreateInfo dinfo{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = needs.features(),
                           .queueCreateInfoCount = 1, .pQueueCreateInfos = &qinfo,
                           .enabledExtensionCount = uint32_t(extensions.size()),
                           .ppEnabledExtensionNames = extensions.data()};
  check(vkCreateDevice(physical_, &dinfo, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, report_.queue_family, 0, &queue_);
}

void Device::finish_setup(const std::string& cache) {
  memory_ = std::make_unique<Memory>(device_, physical_);
  std::filesystem::path cache_file;
  if (cache != "-") {
    if (!cache.empty()) {
      cache_file = cache;
    } else if (auto dir = cache_directory(); !dir.empty()) {
      char key[96];
      std::snprintf(key, sizeof key, "pipelines-%04x-%04x-%08x.bin", report_.vendor_id, report_.device_id,
                    report_.driver_version);
      cache_file = dir / key;
    }
  }
  if (env_flag("LORASTUDIO_PIPELINE_STATS") && !executable_info_)
    std::fprintf(stderr, "LORASTUDIO_PIPELINE_STATS: %s lacks VK_KHR_pipeline_executable_properties; no statistics\n",
                 report_.name.c_str());
  pipelines_ = std::make_unique<Pipelines>(device_, cache_file, pipeline_stats_, subgroup_32_, executable_info_);
  VkCommandPoolCreateInfo pinfo{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                .queueFamilyIndex = report_.queue_family};
  check(vkCreateCommandPool(device_, &pinfo, nullptr, &transfer_pool_), "vkCreateCommandPool");
}

Device::~Device() { release(); }

void Device::release() {
  if (device_) vkDeviceWaitIdle(device_);
  pipelines_.reset();
  memory_.reset();
  for (VkFence f : all_fences_) vkDestroyFence(device_, f, nullptr);
  all_fences_.clear();
  free_fences_.clear();
  if (transfer_pool_) vkDestroyCommandPool(device_, transfer_pool_, nullptr);
  transfer_pool_ = VK_NULL_HANDLE;
  if (!owns_) return;
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  device_ = VK_NULL_HANDLE;
  messenger_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Device::on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                         VkDebugUtilsMessageTypeFlagsEXT,
                                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<Device*>(user);
  ++self->validation_messages_;
  std::string msg = data && data->pMessage ? data->pMessage : "(no message)";
  if (self->on_validation_message_) self->on_validation_message_(msg);
  else std::cerr << "vulkan validation: " << msg << "\n";
  return VK_FALSE;
}

VkFence Device::take_fence() {
  std::lock_guard lock(fence_mutex_);
  if (!free_fences_.empty()) {
    VkFence f = free_fences_.back();
    free_fences_.pop_back();
    return f;
  }
  VkFenceCreateInfo finfo{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence f = VK_NULL_HANDLE;
  check(vkCreateFence(device_, &finfo, nullptr, &f), "vkCreateFence");
  all_fences_.push_back(f);
  return f;
}

void Device::return_fence(VkFence fence) {
  std::lock_guard lock(fence_mutex_);
  free_fences_.push_back(fence);
}

void simulate_device_loss_after(std::optional<uint64_t> submits) {
  g_submits_before_loss = submits ? int64_t(std::min<uint64_t>(*submits, uint64_t(INT64_MAX))) : -1;
}

void Device::submit_and_wait(VkCommandBuffer cb) {
  VkSubmitInfo info{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
  VkFence fence = take_fence();
  try {
    check(vkResetFences(device_, 1, &fence), "vkResetFences");
    {
      std::unique_lock lock(*queue_mutex_);
      // A window waiting to present goes first (for at most kClaimTimeout after it asked, so a window
      // that stopped drawing cannot stall the engine).
      if (claimed_) claim_released_.wait_until(lock, claimed_at_ + kClaimTimeout, [&] { return !claimed_; });
      claimed_ = false;
      if (simulated_loss_now()) check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit (simulated)");
      check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
      ++in_flight_;
    }
    VkResult r = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
    --in_flight_;
    check(r, "vkWaitForFences");
  } catch (...) {
    return_fence(fence);
    throw;
  }
  return_fence(fence);
}

MemoryBudget Device::memory_budget() const {
  return read_memory_budget(physical_, report_.memory_budget, memory_->stats().device_block_bytes);
}

bool Device::submit_for_window(const std::function<void(VkQueue)>& submit) {
  {
    std::unique_lock lock(*queue_mutex_);
    if (in_flight_.load() > 0) {
      if (!claimed_) claimed_at_ = std::chrono::steady_clock::now();
      claimed_ = true;
      return false;
    }
    claimed_ = false;
    submit(queue_);  // may throw: the claim is cleared already
  }
  claim_released_.notify_all();
  return true;
}

void Device::copy(const Allocation& src, VkDeviceSize src_offset, const Allocation& dst, VkDeviceSize dst_offset,
                  VkDeviceSize size) {
  std::lock_guard lock(transfer_mutex_);
  VkCommandBufferAllocateInfo ainfo{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = transfer_pool_, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  VkCommandBuffer cb = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device_, &ainfo, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo binfo{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vkBeginCommandBuffer(cb, &binfo);
  // Earlier compute writes must land before the copy reads; the copy must land before later reads.
  VkMemoryBarrier before{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                         .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                       nullptr, 0, nullptr);
  VkBufferCopy region{.srcOffset = src_offset, .dstOffset = dst_offset, .size = size};
  vkCmdCopyBuffer(cb, src.buffer(), dst.buffer(), 1, &region);
  VkMemoryBarrier after{.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, nullptr, 0,
                       nullptr);
  vkEndCommandBuffer(cb);
  try {
    submit_and_wait(cb);
  } catch (...) {
    vkFreeCommandBuffers(device_, transfer_pool_, 1, &cb);
    throw;
  }
  vkFreeCommandBuffers(device_, transfer_pool_, 1, &cb);
}

// Transfers through staging memory go in slices of at most this many bytes, so that loading a
// multi-GB model does not hold a staging buffer as large as its biggest tensor.
constexpr VkDeviceSize kStagingSlice = VkDeviceSize(64) << 20;

void Device::write(const Allocation& dst, VkDeviceSize offset, const void* data, VkDeviceSize size) {
  if (offset + size > dst.size()) throw Error("device write past the end of a buffer");
  if (size == 0) return;
  if (dst.mapped()) {
    std::memcpy(static_cast<char*>(dst.mapped()) + offset, data, size);
    return;
  }
  auto staging = memory_->allocate_staging(std::min(size, kStagingSlice));
  for (VkDeviceSize done = 0; done < size;) {
    VkDeviceSize n = std::min(size - done, kStagingSlice);
    std::memcpy(staging->mapped(), static_cast<const char*>(data) + done, n);
    copy(*staging, 0, dst, offset + done, n);
    done += n;
  }
}

void Device::read(const Allocation& src, VkDeviceSize offset, void* data, VkDeviceSize size) {
  if (offset + size > src.size()) throw Error("device read past the end of a buffer");
  if (size == 0) return;
  if (src.mapped()) {
    std::memcpy(data, static_cast<const char*>(src.mapped()) + offset, size);
    return;
  }
  auto staging = memory_->allocate_staging(std::min(size, kStagingSlice));
  for (VkDeviceSize done = 0; done < size;) {
    VkDeviceSize n = std::min(size - done, kStagingSlice);
    copy(src, offset + done, *staging, 0, n);
    std::memcpy(static_cast<char*>(data) + done, staging->mapped(), n);
    done += n;
  }
}

}  // namespace ls::vk
