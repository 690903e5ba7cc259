#pragma once
// The desktop window: GLFW, the engine's device created for it (one VkDevice, one queue that computes,
// draws and presents), a swapchain, and Dear ImGui with its GLFW and Vulkan backends (Debian's 1.86).
//
// The UI thread never waits: not for GPU work (the engine's or its own), not for the display, not for
// the X server. It only records and submits a frame, and only when
//   - the presenter thread has an image acquired for it (acquiring may wait for the display: vsync),
//   - no engine work is on the queue (vk::Device::submit_for_window), and
//   - the frame differs from the one on the screen (software devices draw on the cores that train);
// otherwise present() returns at once and the caller tries again next loop. The presenter thread waits
// for the frame's fence, presents it (software presentation, Mesa's lavapipe, copies the pixels to the X
// server inside vkQueuePresentKHR), acquires the next image, and rebuilds the swapchain after a resize
// (waiting for our own frames only, never vkDeviceWaitIdle, which would wait for a training step).
// ImGui's per-frame platform input comes from GLFW callbacks cached here (new_frame) rather than from
// ImGui_ImplGlfw_NewFrame, whose size, focus and cursor queries are X round trips that wait while the X
// server copies a frame. On X11 the swapchain talks to the server over a connection of its own.
// Screenshots are encoded on their own threads. Minimised windows draw nothing.
#define GLFW_INCLUDE_VULKAN  // glfwCreateWindowSurface and friends
#include <GLFW/glfw3.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
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
  bool minimized() const { return iconified_ || fb_width_ == 0 || fb_height_ == 0; }
  // The monitor's refresh rate in Hz (60 when unknown).
  int refresh_rate() const { return refresh_rate_; }
  void set_size(int width, int height) { glfwSetWindowSize(window_, width, height); }
  // The platform's part of a new ImGui frame (call ImGui::NewFrame after it).
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
  // Between frames: builds these codepoints (ui/glyphs.h) into the font atlas from the CJK fonts found at start
  // (LORASTUDIO_CJK_FONT, and Debian's CJK font packages' files), remaking the atlas's texture.
  void add_glyphs(std::span<const uint32_t> codepoints);
  const std::vector<std::filesystem::path>& cjk_fonts() const { return cjk_fonts_; }  // empty: none found
  uint32_t glyphs_missing() const { return glyphs_missing_; }  // asked for and in no font of the atlas

  std::function<void(std::vector<std::filesystem::path>)> on_drop;

 private:
  struct Slot {
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;         // signalled when the slot's frame is done
    VkSemaphore acquired = VK_NULL_HANDLE;  // its image is ready to be drawn
  };
  // A screenshot's pixels, copied out of the presented image into host memory of the window's own (not
  // the engine's allocator, whose lock a worker may hold while it allocates).
  struct Readback {
    std::filesystem::path file;
    uint32_t slot = 0, width = 0, height = 0;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
  };
  // Shared by the UI thread and the presenter, guarded by present_mutex_.
  struct Presentation {
    std::optional<uint32_t> ready_image;  // acquired for the UI, with slots_[ready_slot].acquired
    uint32_t ready_slot = 0;
    std::optional<uint32_t> submitted_image;  // drawn by slots_[submitted_slot], to be presented
    uint32_t submitted_slot = 0;
    uint64_t resizes = 0, built = 0;  // framebuffer size changes seen / the swapchain was built for
    bool out_of_date = false;         // the swapchain no longer fits the surface
    int fb_width = 0, fb_height = 0;  // the framebuffer's size, for the presenter
    bool quit = false;
  };

  void release();
  void create_surface(bool own_connection);
  void create_swapchain();
  void destroy_swapchain_images();
  void wait_own_frames();
  void record(uint32_t slot, uint32_t image, ImDrawData* draw_data);
  Readback make_readback(uint32_t slot);
  void collect_screenshots();
  void presenter_loop();
  void setup_imgui(float scale);
  void init_imgui_vulkan();
  void create_descriptor_pool();
  void update_mouse_cursor();
  static void on_drop_paths(GLFWwindow* w, int count, const char** paths);
  static void on_framebuffer_size(GLFWwindow* w, int width, int height);
  static void on_window_size(GLFWwindow* w, int width, int height);
  static void on_iconify(GLFWwindow* w, int iconified);
  static void on_content_scale(GLFWwindow* w, float sx, float sy);
  static void on_cursor_pos(GLFWwindow* w, double x, double y);
  static void on_cursor_enter(GLFWwindow* w, int entered);
  static void on_focus(GLFWwindow* w, int focused);
  static void on_mouse_button(GLFWwindow* w, int button, int action, int mods);

  GLFWwindow* window_ = nullptr;
  std::unique_ptr<vk::Device> device_;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  void* xcb_ = nullptr;  // the surface's own X connection (xcb_connection_t), on X11
  VkSurfaceFormatKHR format_{};
  VkRenderPass render_pass_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  static constexpr uint32_t kSlots = 2;
  Slot slots_[kSlots];

  // The swapchain: rebuilt by the presenter; read by the UI thread only while it holds an image.
  VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
  VkExtent2D extent_{};
  bool can_read_back_ = false;
  std::vector<VkImage> images_;
  std::vector<VkImageView> views_;
  std::vector<VkFramebuffer> framebuffers_;
  std::vector<VkSemaphore> rendered_;  // per image index: the frame is drawn, present may go
  uint32_t acquire_slot_ = 0;          // the presenter's next slot

  std::thread presenter_;
  std::mutex present_mutex_;
  std::condition_variable present_wake_;
  Presentation presentation_;
  std::string present_error_;  // from the presenter, thrown on the UI thread; guarded by present_mutex_

  // Platform state from GLFW callbacks (UI thread).
  int win_width_ = 0, win_height_ = 0, fb_width_ = 0, fb_height_ = 0;
  bool iconified_ = false, focused_ = true, hovered_ = true;
  double mouse_x_ = -1, mouse_y_ = -1;
  bool mouse_pressed_[ImGuiMouseButton_COUNT] = {};  // pressed since the last frame (short clicks count)
  double time_ = 0;
  ImGuiMouseCursor cursor_ = ImGuiMouseCursor_Arrow;
  GLFWcursor* cursors_[ImGuiMouseCursor_COUNT] = {};
  int refresh_rate_ = 60;
  float font_scale_ = 1;  // the content scale the font and sizes were made for
  float font_pixels_ = 15;
  std::vector<std::filesystem::path> cjk_fonts_;
  std::vector<std::vector<unsigned char>> cjk_bytes_;  // their files, read when the first glyph is asked for
  std::vector<ImWchar> cjk_glyphs_, cjk_ranges_;  // the glyphs built from it so far; as ranges for the atlas
  uint32_t glyphs_missing_ = 0;

  uint64_t last_hash_ = 0;
  bool imgui_vulkan_ = false, imgui_glfw_ = false;
  std::filesystem::path ini_file_;
  std::string ini_name_;
  std::filesystem::path pending_screenshot_;
  std::vector<Readback> readbacks_;    // screenshots recorded, waiting for their frames
  std::vector<std::thread> encoders_;  // PNG encoding and writing, off the UI thread
  mutable std::mutex screenshot_mutex_;
  std::set<std::string> written_;      // guarded by screenshot_mutex_
  std::string screenshot_error_;       // guarded by screenshot_mutex_
  std::vector<std::filesystem::path> dropped_;
};

}  // namespace ls::app
