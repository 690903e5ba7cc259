#include "vk/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "error.h"

namespace ls::vk {

namespace {

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

VkInstance create_instance(bool validation) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw Error("the Vulkan loader is version " + version_string(loader_version) + "; lorastudio needs 1.2 or newer");
  VkApplicationInfo app{.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "lorastudio",
                        .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0), .pEngineName = "lorastudio",
                        .engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
                        .apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3)};
  std::vector<const char*> layers, extensions;
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
  check(r, "vkCreateInstance");
  return instance;
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
  instance_ = create_instance(validation);
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
    std::vector<DeviceReport> reports;
    for (uint32_t i = 0; i < devs.size(); ++i) reports.push_back(read_device_report(instance_, devs[i], i));
    std::string select = options.select;
    if (select.empty())
      if (const char* e = std::getenv("LORASTUDIO_DEVICE")) select = e;
    uint32_t index = choose_device(reports, select);
    physical_ = devs[index];
    report_ = reports[index];
    if (options.storage_range_limit && options.storage_range_limit < report_.max_storage_range)
      report_.max_storage_range = options.storage_range_limit;
    create_logical_device();
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
  finish_setup("");
}

void Device::create_logical_device() {
  if (!report_.usable()) throw Error("device " + report_.name + " lacks 16-bit storage, shaderInt16 or Vulkan 1.2");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qinfo{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                .queueFamilyIndex = report_.queue_family, .queueCount = 1,
                                .pQueuePriorities = &priority};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkan12Features f12{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
  VkPhysicalDeviceFeatures2 features{.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
  f11.storageBuffer16BitAccess = VK_TRUE;
  f12.shaderFloat16 = report_.float16;
  f12.vulkanMemoryModel = report_.memory_model;
  features.features.shaderInt16 = VK_TRUE;
  std::vector<const char*> extensions;
  if (report_.coopmat_nv && report_.memory_model && device_has_extension(physical_, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    coop.cooperativeMatrix = VK_TRUE;
    f12.pNext = &coop;
    bool shape = std::any_of(report_.coopmat_shapes.begin(), report_.coopmat_shapes.end(), [](const CoopMatShape& s) {
      return s.m == 16 && s.n == 16 && s.k == 16 && s.a == "f16" && s.b == "f16" && s.c == "f32";
    });
    coopmat_ = shape && report_.subgroup_size == 32 && report_.float16 && !env_flag("LORASTUDIO_NO_COOPMAT");
  }
  VkDeviceCreateInfo dinfo{.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &features,
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
  pipelines_ = std::make_unique<Pipelines>(device_, cache_file);
  VkCommandPoolCreateInfo pinfo{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                .queueFamilyIndex = report_.queue_family};
  check(vkCreateCommandPool(device_, &pinfo, nullptr, &transfer_pool_), "vkCreateCommandPool");
  VkFenceCreateInfo finfo{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(device_, &finfo, nullptr, &fence_), "vkCreateFence");
}

Device::~Device() { release(); }

void Device::release() {
  if (device_) vkDeviceWaitIdle(device_);
  pipelines_.reset();
  memory_.reset();
  if (fence_) vkDestroyFence(device_, fence_, nullptr);
  if (transfer_pool_) vkDestroyCommandPool(device_, transfer_pool_, nullptr);
  fence_ = VK_NULL_HANDLE;
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

void Device::submit_and_wait(VkCommandBuffer cb) {
  VkSubmitInfo info{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
  std::lock_guard lock(*queue_mutex_);
  check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  check(vkQueueSubmit(queue_, 1, &info, fence_), "vkQueueSubmit");
  check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
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
