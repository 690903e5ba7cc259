#pragma once
// The desktop window: GLFW, the engine's device created for it (one VkDevice, one queue that computes,
// draws and presents), a swapchain, and Dear ImGui with its GLFW and Vulkan backends (Debian's 1.86).
//
// The UI thread never waits for GPU work, the engine's or its own: present() records and submits a frame
// only when the slot's previous frame is done (its fence, polled), the presenter thread is idle, an image
// could be acquired within a few milliseconds (display pacing) and no engine work is on the queue
// (vk::Device::submit_for_window); otherwise it returns false and the caller tries again next loop.
// vkQueuePresentKHR runs on the presenter thread after the frame's fence: software presentation (Mesa's
// lavapipe) copies the image to the window inside it, tens of milliseconds the UI thread does not wait.
// The swapchain is rebuilt on resize after waiting for our own frames only (never vkDeviceWaitIdle,
// which would wait for a training step). Screenshots are encoded on their own threads. Minimised
// windows draw nothing.
#define GLFW_INCLUDE_VULKAN  // glfwCreateWindowSurface and friends
#include <GLFW/glfw3.h>

#include <filesystem>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include <imgui.h>

#include "vk/device.h"

namespace ls::app {

struct WindowOptions {
  std::string title = "lorastudio";
  int width = 0, height = 0;  // 0: 85% of the monitor's work area
  std::string device;         // as --device
  bool validation = false;
  std::filesystem::path ini_file;  // ImGui's window layout (imgui.ini)
};

class Window {
 public:
  explicit Window(const WindowOptions& options);  // throws ls::Error (no display, no Vulkan, no device)
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  vk::Device& device() { return *device_; }
  bool should_close() const { return glfwWindowShouldClose(window_); }
  // Handles the window system's events; dropped paths go to on_drop.
  void poll();
  bool minimized() const;
  void set_size(int width, int height) { glfwSetWindowSize(window_, width, height); }
  // The backends' part of a new ImGui frame (call ImGui::NewFrame after it).
  void new_frame();
  // Draws and presents the frame if that can be done without waiting; see the top. `unchanged`: the
  // screen already shows exactly this frame.
  enum class Shown { presented, unchanged, no };
  Shown present(ImDrawData* draw_data);
  // The next presented frame is also written to `file` as a PNG.
  void request_screenshot(const std::filesystem::path& file);
  bool screenshot_written(const std::filesystem::path& file) const;
  // A screenshot that failed to be written ("" if none).
  std::string take_screenshot_error();

  std::function<void(std::vector<std::filesystem::path>)> on_drop;

 private:
  struct Slot {
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;          // signalled when the slot's frame is done
    VkSemaphore acquired = VK_NULL_HANDLE;   // the image is ready to be drawn
    // A screenshot's pixels: host-visible memory of the window's own (not the engine's allocator, whose
    // lock a worker may hold while it allocates).
    VkBuffer readback = VK_NULL_HANDLE;
    VkDeviceMemory readback_memory = VK_NULL_HANDLE;
    void* readback_mapped = nullptr;
    VkDeviceSize readback_size = 0;
    std::filesystem::path screenshot;
    uint32_t width = 0, height = 0;
  };
  void release();
  void create_surface(bool own_connection);
  void create_swapchain();
  void destroy_swapchain_images();
  void wait_own_frames();
  void record(Slot& slot, ImDrawData* draw_data);
  void collect_screenshots();
  void ensure_readback(Slot& slot, VkDeviceSize size);
  void free_readback(Slot& slot);
  void presenter_loop();
  bool presenter_idle();
  void setup_imgui(float scale);
  static void on_drop_paths(GLFWwindow* w, int count, const char** paths);
  static void on_resize(GLFWwindow* w, int width, int height);

  GLFWwindow* window_ = nullptr;
  std::unique_ptr<vk::Device> device_;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  void* xcb_ = nullptr;  // the surface's own X connection (xcb_connection_t), on X11
  VkSurfaceFormatKHR format_{};
  VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
  VkExtent2D extent_{};
  bool can_read_back_ = false;
  VkRenderPass render_pass_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkImage> images_;
  std::vector<VkImageView> views_;
  std::vector<VkFramebuffer> framebuffers_;
  std::vector<VkSemaphore> rendered_;  // per image index: the frame is drawn, present may go
  static constexpr uint32_t kSlots = 2;
  Slot slots_[kSlots];
  uint32_t slot_ = 0;
  bool image_held_ = false;
  uint32_t image_ = 0;
  bool dirty_ = false;
  uint64_t last_hash_ = 0;
  bool imgui_vulkan_ = false, imgui_glfw_ = false;
  std::filesystem::path ini_file_;
  std::string ini_name_;
  std::filesystem::path pending_screenshot_;
  std::vector<std::thread> encoders_;  // PNG encoding and writing, off the UI thread
  mutable std::mutex screenshot_mutex_;
  std::set<std::string> written_;      // guarded by screenshot_mutex_
  std::string screenshot_error_;       // guarded by screenshot_mutex_
  // The presenter thread: presents image `present_image_` once slot `present_slot_`'s frame is drawn.
  std::thread presenter_;
  std::mutex present_mutex_;
  std::condition_variable present_wake_;
  bool present_pending_ = false, present_quit_ = false;  // guarded by present_mutex_
  uint32_t present_image_ = 0, present_slot_ = 0;
  VkResult present_result_ = VK_SUCCESS;
  std::vector<std::filesystem::path> dropped_;
};

}  // namespace ls::app
