// The window's swapchain, its frames (record, submit, present on the presenter thread) and screenshots;
// creation, release and input are in gui_window.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#include <backends/imgui_impl_vulkan.h>
#include <stb_image_write.h>

#include "error.h"
#include "gui_window.h"
#include "util/atomic_file.h"

// Index of this file:
// [SECTION] Swapchain
// [SECTION] Frames: record, submit, present
// [SECTION] Screenshots

namespace ls::app {

namespace fs = std::filesystem;

namespace {

// What a frame draws: every vertex, index and draw command (not a cryptographic hash).
uint64_t draw_data_hash(const ImDrawData* d) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  if (!d) return h;
  mix(&d->DisplaySize, sizeof d->DisplaySize);
  for (int n = 0; n < d->CmdListsCount; ++n) {
    const ImDrawList* l = d->CmdLists[n];
    mix(l->VtxBuffer.Data, size_t(l->VtxBuffer.Size) * sizeof(ImDrawVert));
    mix(l->IdxBuffer.Data, size_t(l->IdxBuffer.Size) * sizeof(ImDrawIdx));
    for (const ImDrawCmd& c : l->CmdBuffer) {
      mix(&c.ClipRect, sizeof c.ClipRect);
      mix(&c.ElemCount, sizeof c.ElemCount);
      mix(&c.IdxOffset, sizeof c.IdxOffset);
      mix(&c.VtxOffset, sizeof c.VtxOffset);
    }
  }
  return h;
}

}  // namespace

// [SECTION] Swapchain

void Window::wait_own_frames() {
  for (const Slot& s : slots_)
    if (s.fence) vkWaitForFences(device_->handle(), 1, &s.fence, VK_TRUE, UINT64_MAX);
}

void Window::destroy_swapchain_images() {
  const VkDevice dev = device_->handle();
  for (auto fb : framebuffers_) vkDestroyFramebuffer(dev, fb, nullptr);
  for (auto v : views_) vkDestroyImageView(dev, v, nullptr);
  framebuffers_.clear();
  views_.clear();
  images_.clear();
}

// On the presenter thread (and once at start), when no image is acquired or waiting to be presented.
void Window::create_swapchain() {
  const VkDevice dev = device_->handle();
  VkSurfaceCapabilitiesKHR caps;
  vk::check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(device_->physical(), surface_, &caps),
            "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
  VkExtent2D extent = caps.currentExtent;
  if (extent.width == UINT32_MAX) {  // the surface takes the swapchain's size: the framebuffer's
    std::lock_guard lock(present_mutex_);
    extent = {std::clamp(uint32_t(std::max(presentation_.fb_width, 0)), caps.minImageExtent.width, caps.maxImageExtent.width),
              std::clamp(uint32_t(std::max(presentation_.fb_height, 0)), caps.minImageExtent.height,
                         caps.maxImageExtent.height)};
  }
  destroy_swapchain_images();
  extent_ = extent;
  if (extent.width == 0 || extent.height == 0) {  // minimised: no swapchain until it is shown again
    if (swapchain_) vkDestroySwapchainKHR(dev, swapchain_, nullptr);
    swapchain_ = VK_NULL_HANDLE;
    return;
  }
  uint32_t count = std::max(caps.minImageCount + 1, 2u);
  if (caps.maxImageCount) count = std::min(count, caps.maxImageCount);
  can_read_back_ = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
  const VkSwapchainKHR old = swapchain_;
  VkSwapchainCreateInfoKHR info{
      .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR, .surface = surface_, .minImageCount = count,
      .imageFormat = format_.format, .imageColorSpace = format_.colorSpace, .imageExtent = extent, .imageArrayLayers = 1,
      .imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | (can_read_back_ ? VkImageUsageFlags(VK_IMAGE_USAGE_TRANSFER_SRC_BIT) : 0u),
      .imageSharingMode = VK_SHARING_MODE_EXCLUSIVE, .preTransform = caps.currentTransform,
      .compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, .presentMode = VK_PRESENT_MODE_FIFO_KHR,  // vsync
      .clipped = VK_TRUE, .oldSwapchain = old};
  vk::check(vkCreateSwapchainKHR(dev, &info, nullptr, &swapchain_), "vkCreateSwapchainKHR");
  if (old) vkDestroySwapchainKHR(dev, old, nullptr);
  uint32_t n = 0;
  vkGetSwapchainImagesKHR(dev, swapchain_, &n, nullptr);
  images_.resize(n);
  vkGetSwapchainImagesKHR(dev, swapchain_, &n, images_.data());
  for (VkImage image : images_) {
    VkImageViewCreateInfo vinfo{.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, .image = image,
                                .viewType = VK_IMAGE_VIEW_TYPE_2D, .format = format_.format,
                                .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    VkImageView view = VK_NULL_HANDLE;
    vk::check(vkCreateImageView(dev, &vinfo, nullptr, &view), "vkCreateImageView");
    views_.push_back(view);
    VkFramebufferCreateInfo finfo{.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO, .renderPass = render_pass_,
                                  .attachmentCount = 1, .pAttachments = &view, .width = extent.width,
                                  .height = extent.height, .layers = 1};
    VkFramebuffer fb = VK_NULL_HANDLE;
    vk::check(vkCreateFramebuffer(dev, &finfo, nullptr, &fb), "vkCreateFramebuffer");
    framebuffers_.push_back(fb);
    // The semaphores outlive swapchains: a present may still wait on one when the swapchain is rebuilt.
    if (rendered_.size() < images_.size()) {
      VkSemaphoreCreateInfo sinfo{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
      VkSemaphore sem = VK_NULL_HANDLE;
      vk::check(vkCreateSemaphore(dev, &sinfo, nullptr, &sem), "vkCreateSemaphore");
      rendered_.push_back(sem);
    }
  }
}

// [SECTION] Frames: record, submit, present

// The presenter: presents what the UI thread submitted (after its fence), rebuilds the swapchain when the
// surface changed, and keeps one image acquired for the UI thread's next frame.
void Window::presenter_loop() {
  const VkDevice dev = device_->handle();
  std::unique_lock lock(present_mutex_);
  auto& p = presentation_;
  for (;;) {
    if (p.submitted_image) {
      const uint32_t image = *p.submitted_image, slot = p.submitted_slot;
      lock.unlock();
      vkWaitForFences(dev, 1, &slots_[slot].fence, VK_TRUE, UINT64_MAX);  // our own frame only
      VkPresentInfoKHR info{.sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR, .waitSemaphoreCount = 1,
                            .pWaitSemaphores = &rendered_[image], .swapchainCount = 1, .pSwapchains = &swapchain_,
                            .pImageIndices = &image};
      VkResult r;
      {
        std::lock_guard queue_lock(device_->queue_mutex());
        r = vkQueuePresentKHR(device_->queue(), &info);
      }
      lock.lock();
      p.submitted_image.reset();
      if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) p.out_of_date = true;
      else if (r != VK_SUCCESS) present_error_ = std::string("vkQueuePresentKHR: ") + vk::result_name(r);
      continue;
    }
    if (p.quit) return;
    if ((p.out_of_date || p.resizes != p.built) && !p.ready_image) {
      const uint64_t resizes = p.resizes;
      lock.unlock();
      std::string error;
      try {
        wait_own_frames();
        create_swapchain();
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      p.built = resizes;
      p.out_of_date = false;
      if (!error.empty()) present_error_ = error;
      continue;
    }
    if (!p.ready_image && swapchain_ && present_error_.empty()) {
      const uint32_t slot = acquire_slot_;
      lock.unlock();
      // The slot's semaphore was last waited on by its previous frame: that frame must be done.
      vkWaitForFences(dev, 1, &slots_[slot].fence, VK_TRUE, UINT64_MAX);
      uint32_t image = 0;
      const VkResult r = vkAcquireNextImageKHR(dev, swapchain_, 100'000'000, slots_[slot].acquired, VK_NULL_HANDLE, &image);
      lock.lock();
      if (r == VK_SUCCESS || r == VK_SUBOPTIMAL_KHR) {
        p.ready_image = image;
        p.ready_slot = slot;
        acquire_slot_ = (slot + 1) % kSlots;
        if (r == VK_SUBOPTIMAL_KHR) p.out_of_date = true;  // drawn and presented all the same, then rebuilt
      } else if (r == VK_ERROR_OUT_OF_DATE_KHR) {
        p.out_of_date = true;
      } else if (r != VK_TIMEOUT && r != VK_NOT_READY) {
        present_error_ = std::string("vkAcquireNextImageKHR: ") + vk::result_name(r);
      }
      continue;
    }
    present_wake_.wait(lock);  // for a frame, a resize or the end
  }
}

Window::Shown Window::present(ImDrawData* draw_data) {
  collect_screenshots();
  std::optional<uint32_t> image;
  uint32_t slot = 0;
  bool stale = false;
  {
    std::lock_guard lock(present_mutex_);
    if (!present_error_.empty()) throw Error("the window cannot present: " + present_error_);
    image = presentation_.ready_image;
    slot = presentation_.ready_slot;
    stale = presentation_.out_of_date || presentation_.resizes != presentation_.built;
  }
  // A frame that looks like the one on the screen is not drawn again (software devices draw on the CPU
  // cores that train).
  const uint64_t hash = draw_data_hash(draw_data);
  if (hash == last_hash_ && pending_screenshot_.empty() && !stale) return Shown::unchanged;
  if (!image) return Shown::no;  // the presenter is presenting, or waiting for the display
  const VkDevice dev = device_->handle();
  const bool submitted = device_->submit_for_window([&](VkQueue queue) {
    record(slot, *image, draw_data);
    Slot& s = slots_[slot];
    vk::check(vkResetFences(dev, 1, &s.fence), "vkResetFences");
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    VkSubmitInfo submit{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .waitSemaphoreCount = 1, .pWaitSemaphores = &s.acquired,
                        .pWaitDstStageMask = &wait_stage, .commandBufferCount = 1, .pCommandBuffers = &s.cb,
                        .signalSemaphoreCount = 1, .pSignalSemaphores = &rendered_[*image]};
    vk::check(vkQueueSubmit(queue, 1, &submit, s.fence), "vkQueueSubmit (window)");
  });
  if (!submitted) return Shown::no;  // engine work is on the queue; the engine waits for our next try
  {
    std::lock_guard lock(present_mutex_);
    presentation_.ready_image.reset();
    presentation_.submitted_image = *image;
    presentation_.submitted_slot = slot;
  }
  present_wake_.notify_all();
  last_hash_ = hash;
  return Shown::presented;
}

// On the UI thread, holding the image: the swapchain cannot change meanwhile.
void Window::record(uint32_t slot, uint32_t image, ImDrawData* draw_data) {
  Slot& s = slots_[slot];
  vk::check(vkResetCommandPool(device_->handle(), s.pool, 0), "vkResetCommandPool");
  VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vk::check(vkBeginCommandBuffer(s.cb, &begin), "vkBeginCommandBuffer");
  VkClearValue clear{};
  clear.color = {{0.06f, 0.065f, 0.075f, 1.0f}};
  VkRenderPassBeginInfo rp{.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO, .renderPass = render_pass_,
                           .framebuffer = framebuffers_[image], .renderArea = {{0, 0}, extent_},
                           .clearValueCount = 1, .pClearValues = &clear};
  vkCmdBeginRenderPass(s.cb, &rp, VK_SUBPASS_CONTENTS_INLINE);
  ImGui_ImplVulkan_RenderDrawData(draw_data, s.cb);
  vkCmdEndRenderPass(s.cb);
  if (!pending_screenshot_.empty() && can_read_back_) {
    // Copy the finished image into host memory; it is read once the slot's fence says the frame is done.
    Readback r = make_readback(slot);
    r.file = std::exchange(pending_screenshot_, {});
    VkImageMemoryBarrier to_copy{.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
                                 .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                                 .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
                                 .oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                                 .newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                 .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                 .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .image = images_[image],
                                 .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1}};
    vkCmdPipelineBarrier(s.cb, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                         nullptr, 0, nullptr, 1, &to_copy);
    VkBufferImageCopy region{.bufferOffset = 0, .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
                             .imageExtent = {r.width, r.height, 1}};
    vkCmdCopyImageToBuffer(s.cb, images_[image], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, r.buffer, 1, &region);
    VkImageMemoryBarrier to_present = to_copy;
    to_present.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    to_present.dstAccessMask = 0;
    to_present.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    to_present.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
    VkBufferMemoryBarrier to_host{.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                  .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
                                  .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
                                  .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED, .buffer = r.buffer, .offset = 0,
                                  .size = VK_WHOLE_SIZE};
    vkCmdPipelineBarrier(s.cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &to_host, 1,
                         &to_present);
    readbacks_.push_back(std::move(r));
  }
  vk::check(vkEndCommandBuffer(s.cb), "vkEndCommandBuffer");
}

// [SECTION] Screenshots

void Window::request_screenshot(const fs::path& file) {
  pending_screenshot_ = file;
  std::lock_guard lock(screenshot_mutex_);
  written_.erase(file.string());
}

bool Window::screenshot_written(const fs::path& file) const {
  std::lock_guard lock(screenshot_mutex_);
  return written_.count(file.string()) > 0;
}

std::string Window::take_screenshot_error() {
  std::lock_guard lock(screenshot_mutex_);
  return std::exchange(screenshot_error_, {});
}

Window::Readback Window::make_readback(uint32_t slot) {
  const VkDevice dev = device_->handle();
  Readback r{.slot = slot, .width = extent_.width, .height = extent_.height};
  VkBufferCreateInfo binfo{.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = VkDeviceSize(r.width) * r.height * 4,
                           .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT, .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  vk::check(vkCreateBuffer(dev, &binfo, nullptr, &r.buffer), "vkCreateBuffer (screenshot)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, r.buffer, &req);
  VkPhysicalDeviceMemoryProperties props;
  vkGetPhysicalDeviceMemoryProperties(device_->physical(), &props);
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = UINT32_MAX;
  for (uint32_t i = 0; i < props.memoryTypeCount && type == UINT32_MAX; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) type = i;
  VkMemoryAllocateInfo ainfo{.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
                             .memoryTypeIndex = type};
  if (type == UINT32_MAX || vkAllocateMemory(dev, &ainfo, nullptr, &r.memory) != VK_SUCCESS ||
      vkBindBufferMemory(dev, r.buffer, r.memory, 0) != VK_SUCCESS ||
      vkMapMemory(dev, r.memory, 0, VK_WHOLE_SIZE, 0, &r.mapped) != VK_SUCCESS) {
    vkDestroyBuffer(dev, r.buffer, nullptr);
    if (r.memory) vkFreeMemory(dev, r.memory, nullptr);
    throw Error("screenshot: no host-visible memory for the read-back");
  }
  return r;
}

// Screenshots whose frames are done go to a thread each, to be encoded as PNG and written.
void Window::collect_screenshots() {
  const VkDevice dev = device_->handle();
  const bool bgr = format_.format == VK_FORMAT_B8G8R8A8_UNORM || format_.format == VK_FORMAT_B8G8R8A8_SRGB;
  for (size_t i = 0; i < readbacks_.size();) {
    if (vkGetFenceStatus(dev, slots_[readbacks_[i].slot].fence) != VK_SUCCESS) {
      ++i;
      continue;
    }
    encoders_.emplace_back([this, dev, r = readbacks_[i], bgr] {
      try {
        std::vector<uint8_t> rgba(size_t(r.width) * r.height * 4);
        std::memcpy(rgba.data(), r.mapped, rgba.size());
        for (size_t p = 0; p < rgba.size(); p += 4) {
          if (bgr) std::swap(rgba[p], rgba[p + 2]);
          rgba[p + 3] = 255;
        }
        std::string png;
        stbi_write_png_to_func(
            [](void* out, void* data, int size) { static_cast<std::string*>(out)->append(static_cast<char*>(data), size_t(size)); },
            &png, int(r.width), int(r.height), 4, rgba.data(), int(r.width) * 4);
        if (png.empty()) throw Error(r.file.string() + ": the PNG encoder failed");
        if (r.file.has_parent_path()) fs::create_directories(r.file.parent_path());
        write_file_atomically(r.file, png);
        std::lock_guard lock(screenshot_mutex_);
        written_.insert(r.file.string());
      } catch (const std::exception& e) {
        std::lock_guard lock(screenshot_mutex_);
        screenshot_error_ = e.what();
      }
      vkDestroyBuffer(dev, r.buffer, nullptr);
      vkFreeMemory(dev, r.memory, nullptr);
    });
    readbacks_.erase(readbacks_.begin() + long(i));
  }
}

}  // namespace ls::app
