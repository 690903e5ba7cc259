#include "gui_window.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>

#if LS_HAVE_XCB
#define GLFW_EXPOSE_NATIVE_X11
#include <GLFW/glfw3native.h>
#include <xcb/xcb.h>
#include <vulkan/vulkan_xcb.h>
#endif

#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>

#include "error.h"
#include "ui/embedded_font.h"
#include "ui/glyphs.h"

// Index of this file:
// [SECTION] Creation and release
// [SECTION] Platform input (GLFW callbacks, ImGui's per-frame input)
// (swapchain, frames and screenshots: gui_window_frames.cpp)

namespace ls::app {

namespace {

// GLFW reports errors through a callback without a user pointer; the latest one is kept for messages.
std::string& glfw_error() {
  static std::string error;
  return error;
}
void on_glfw_error(int, const char* description) { glfw_error() = description ? description : "unknown GLFW error"; }

bool instance_has_extension(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

void check_imgui_vk(VkResult r) {
  if (r != VK_SUCCESS) vk::check(r, "Dear ImGui's Vulkan backend");
}

// DejaVu Sans (built into the binary, ui/embedded_font.h) at the size of `pixels`, or ImGui's own font
// scaled should the atlas refuse it; then, merged into it, the glyphs of `cjk_ranges` from each CJK font in
// turn (the atlas takes a glyph from the first font that has it).
void load_font(ImGuiIO& io, float pixels, const std::vector<std::vector<unsigned char>>& cjk_fonts,
               const ImWchar* cjk_ranges) {
  static_assert(sizeof(ImWchar) == sizeof(ui::kBuiltInGlyphRanges[0]));
  const auto* ranges = reinterpret_cast<const ImWchar*>(ui::kBuiltInGlyphRanges);
  const auto ttf = ui::dejavu_sans_ttf();
  ImFontConfig embedded;
  embedded.FontDataOwnedByAtlas = false;  // the bytes live in the binary's read-only data
  if (!io.Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(ttf.data()), int(ttf.size()), pixels, &embedded,
                                      ranges)) {
    ImFontConfig config;
    config.SizePixels = std::max(13.0f, pixels * 0.9f);
    io.Fonts->AddFontDefault(&config);
  }
  if (!cjk_ranges || !cjk_ranges[0]) return;
  for (const auto& font : cjk_fonts) {
    ImFontConfig merge;
    merge.MergeMode = true;
    merge.FontDataOwnedByAtlas = false;  // Window::cjk_bytes_ keeps them
    io.Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(font.data()), int(font.size()), pixels, &merge,
                                   cjk_ranges);
  }
}

// The fonts with Chinese, Japanese and Korean glyphs: LORASTUDIO_CJK_FONT, then those of Debian's CJK font
// packages that are installed (the .deb recommends fonts-wqy-microhei or fonts-noto-cjk; each covers all three).
std::vector<std::filesystem::path> find_cjk_fonts() {
  std::vector<std::filesystem::path> found;
  if (const char* e = std::getenv("LORASTUDIO_CJK_FONT"); e && *e) found.emplace_back(e);
  for (const char* f : {"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",      // fonts-noto-cjk
                        "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",              // fonts-wqy-microhei
                        "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",                // fonts-wqy-zenhei
                        "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",   // fonts-droid-fallback
                        "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"}) {          // fonts-nanum (Hangul)
    std::error_code ec;
    if (std::filesystem::is_regular_file(f, ec)) found.emplace_back(f);
  }
  return found;
}

// A dark theme with a little more air than ImGui's default and rounded corners.
void apply_theme(float scale) {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowPadding = {10, 8};
  st.FramePadding = {7, 4};
  st.ItemSpacing = {8, 6};
  st.CellPadding = {6, 3};
  st.WindowRounding = 5;
  st.ChildRounding = 4;
  st.FrameRounding = 4;
  st.PopupRounding = 4;
  st.GrabRounding = 3;
  st.ScrollbarSize = 13;
  st.WindowBorderSize = 1;
  st.WindowTitleAlign = {0.02f, 0.5f};
  st.DisabledAlpha = 0.4f;
  ImVec4* c = st.Colors;
  c[ImGuiCol_WindowBg] = {0.105f, 0.11f, 0.125f, 1.0f};
  c[ImGuiCol_ChildBg] = {0.085f, 0.09f, 0.10f, 1.0f};
  c[ImGuiCol_PopupBg] = {0.12f, 0.125f, 0.14f, 0.98f};
  c[ImGuiCol_Border] = {0.24f, 0.26f, 0.30f, 1.0f};
  c[ImGuiCol_TitleBg] = {0.13f, 0.14f, 0.16f, 1.0f};
  c[ImGuiCol_TitleBgActive] = {0.17f, 0.22f, 0.31f, 1.0f};
  c[ImGuiCol_MenuBarBg] = {0.13f, 0.14f, 0.16f, 1.0f};
  c[ImGuiCol_FrameBg] = {0.17f, 0.18f, 0.21f, 1.0f};
  c[ImGuiCol_FrameBgHovered] = {0.22f, 0.25f, 0.30f, 1.0f};
  c[ImGuiCol_FrameBgActive] = {0.25f, 0.30f, 0.38f, 1.0f};
  c[ImGuiCol_Button] = {0.22f, 0.32f, 0.47f, 1.0f};
  c[ImGuiCol_ButtonHovered] = {0.28f, 0.42f, 0.62f, 1.0f};
  c[ImGuiCol_ButtonActive] = {0.32f, 0.50f, 0.75f, 1.0f};
  c[ImGuiCol_Header] = {0.20f, 0.27f, 0.38f, 1.0f};
  c[ImGuiCol_HeaderHovered] = {0.25f, 0.35f, 0.50f, 1.0f};
  c[ImGuiCol_HeaderActive] = {0.28f, 0.40f, 0.58f, 1.0f};
  c[ImGuiCol_TableRowBgAlt] = {1.0f, 1.0f, 1.0f, 0.03f};
  c[ImGuiCol_PlotHistogram] = {0.35f, 0.62f, 0.95f, 1.0f};
  st.ScaleAllSizes(scale);
}

}  // namespace


// [SECTION] Creation and release

Window::Window(const WindowOptions& o) : ini_file_(o.ini_file) {
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit())
    throw Error("cannot open a window: " + glfw_error() + " (is DISPLAY or WAYLAND_DISPLAY set? --batch trains headless)");
  try {
    if (!glfwVulkanSupported()) throw Error("cannot open a window: GLFW finds no Vulkan loader or driver");
    int width = o.width, height = o.height;
    if (width <= 0 || height <= 0) {
      int x = 0, y = 0, w = 1600, h = 900;
      if (GLFWmonitor* m = glfwGetPrimaryMonitor()) glfwGetMonitorWorkarea(m, &x, &y, &w, &h);
      width = std::max(960, int(float(w) * 0.85f));
      height = std::max(600, int(float(h) * 0.85f));
    }
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
    window_ = glfwCreateWindow(width, height, o.title.c_str(), nullptr, nullptr);
    if (!window_) throw Error("cannot open a window: " + glfw_error());
    glfwSetWindowUserPointer(window_, this);
    // Platform state arrives through callbacks (installed before ImGui's backend, which chains to them).
    glfwSetDropCallback(window_, on_drop_paths);
    glfwSetFramebufferSizeCallback(window_, on_framebuffer_size);
    glfwSetWindowSizeCallback(window_, on_window_size);
    glfwSetWindowIconifyCallback(window_, on_iconify);
    glfwSetWindowContentScaleCallback(window_, on_content_scale);
    glfwSetCursorPosCallback(window_, on_cursor_pos);
    glfwSetCursorEnterCallback(window_, on_cursor_enter);
    glfwSetWindowFocusCallback(window_, on_focus);
    glfwSetMouseButtonCallback(window_, on_mouse_button);
    glfwGetWindowSize(window_, &win_width_, &win_height_);
    glfwGetFramebufferSize(window_, &fb_width_, &fb_height_);
    presentation_.fb_width = fb_width_;
    presentation_.fb_height = fb_height_;
    if (GLFWmonitor* m = glfwGetPrimaryMonitor())
      if (const GLFWvidmode* mode = glfwGetVideoMode(m); mode && mode->refreshRate >= 24 && mode->refreshRate <= 500)
        refresh_rate_ = mode->refreshRate;
    for (auto [imgui, glfw] : {std::pair{ImGuiMouseCursor_Arrow, GLFW_ARROW_CURSOR}, {ImGuiMouseCursor_TextInput, GLFW_IBEAM_CURSOR},
                               {ImGuiMouseCursor_ResizeNS, GLFW_VRESIZE_CURSOR}, {ImGuiMouseCursor_ResizeEW, GLFW_HRESIZE_CURSOR},
                               {ImGuiMouseCursor_Hand, GLFW_HAND_CURSOR}})
      cursors_[imgui] = glfwCreateStandardCursor(glfw);

    uint32_t n = 0;
    const char** names = glfwGetRequiredInstanceExtensions(&n);
    if (!names) throw Error("cannot open a window: " + glfw_error());
    vk::DeviceOptions options{.select = o.device, .validation = o.validation};
    options.instance_extensions.assign(names, names + n);
#if LS_HAVE_XCB
    // On X11 the swapchain gets its own connection to the X server (see create_surface).
    const bool own_connection = glfwGetX11Display() && instance_has_extension(VK_KHR_XCB_SURFACE_EXTENSION_NAME);
    if (own_connection && std::find(options.instance_extensions.begin(), options.instance_extensions.end(),
                                    VK_KHR_XCB_SURFACE_EXTENSION_NAME) == options.instance_extensions.end())
      options.instance_extensions.push_back(VK_KHR_XCB_SURFACE_EXTENSION_NAME);
#else
    const bool own_connection = false;
#endif
    options.device_extensions = {VK_KHR_SWAPCHAIN_EXTENSION_NAME};
    options.can_present = [](VkInstance instance, VkPhysicalDevice physical, uint32_t family) {
      return glfwGetPhysicalDevicePresentationSupport(instance, physical, family) == GLFW_TRUE;
    };
    device_ = std::make_unique<vk::Device>(options);
    create_surface(own_connection);
    VkBool32 supported = VK_FALSE;
    vkGetPhysicalDeviceSurfaceSupportKHR(device_->physical(), device_->queue_family(), surface_, &supported);
    if (!supported) throw Error(device_->report().name + " cannot present to this window");
    const VkFormat wanted[] = {VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_UNORM};
    format_ = ImGui_ImplVulkanH_SelectSurfaceFormat(device_->physical(), surface_, wanted, 2,
                                                    VK_COLORSPACE_SRGB_NONLINEAR_KHR);

    VkAttachmentDescription color{.format = format_.format, .samples = VK_SAMPLE_COUNT_1_BIT,
                                  .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR, .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
                                  .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                  .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                  .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED, .finalLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR};
    VkAttachmentReference ref{.attachment = 0, .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub{.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS, .colorAttachmentCount = 1,
                             .pColorAttachments = &ref};
    VkSubpassDependency dep{.srcSubpass = VK_SUBPASS_EXTERNAL, .dstSubpass = 0,
                            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                            .srcAccessMask = 0, .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT};
    VkRenderPassCreateInfo rp{.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO, .attachmentCount = 1,
                              .pAttachments = &color, .subpassCount = 1, .pSubpasses = &sub, .dependencyCount = 1,
                              .pDependencies = &dep};
    const VkDevice dev = device_->handle();
    vk::check(vkCreateRenderPass(dev, &rp, nullptr, &render_pass_), "vkCreateRenderPass");
    for (Slot& s : slots_) {
      VkCommandPoolCreateInfo pinfo{.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                    .queueFamilyIndex = device_->queue_family()};
      vk::check(vkCreateCommandPool(dev, &pinfo, nullptr, &s.pool), "vkCreateCommandPool");
      VkCommandBufferAllocateInfo ainfo{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = s.pool,
                                        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
      vk::check(vkAllocateCommandBuffers(dev, &ainfo, &s.cb), "vkAllocateCommandBuffers");
      VkFenceCreateInfo finfo{.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, .flags = VK_FENCE_CREATE_SIGNALED_BIT};
      vk::check(vkCreateFence(dev, &finfo, nullptr, &s.fence), "vkCreateFence");
      VkSemaphoreCreateInfo sinfo{.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
      vk::check(vkCreateSemaphore(dev, &sinfo, nullptr, &s.acquired), "vkCreateSemaphore");
    }
    create_descriptor_pool();
    create_swapchain();
    cjk_fonts_ = find_cjk_fonts();

    float sx = 1, sy = 1;
    glfwGetWindowContentScale(window_, &sx, &sy);
    font_scale_ = std::clamp(std::max(sx, sy), 1.0f, 4.0f);
    setup_imgui(font_scale_);
    presenter_ = std::thread([this] { presenter_loop(); });
  } catch (...) {
    release();
    throw;
  }
}

// On X11, software presentation (Mesa's lavapipe) sends every frame's pixels over the surface's X
// connection. Sharing GLFW's connection would make the UI thread's X requests queue behind them; a
// connection of the surface's own keeps input handling independent of presentation.
void Window::create_surface(bool own_connection) {
#if LS_HAVE_XCB
  if (own_connection) {
    auto* connection = xcb_connect(nullptr, nullptr);
    if (connection && !xcb_connection_has_error(connection)) {
      xcb_ = connection;
      VkXcbSurfaceCreateInfoKHR info{.sType = VK_STRUCTURE_TYPE_XCB_SURFACE_CREATE_INFO_KHR, .connection = connection,
                                     .window = xcb_window_t(glfwGetX11Window(window_))};
      auto create = reinterpret_cast<PFN_vkCreateXcbSurfaceKHR>(
          vkGetInstanceProcAddr(device_->instance(), "vkCreateXcbSurfaceKHR"));
      if (create && create(device_->instance(), &info, nullptr, &surface_) == VK_SUCCESS) return;
    }
    if (connection) xcb_disconnect(connection);
    xcb_ = nullptr;
  }
#else
  (void)own_connection;
#endif
  vk::check(glfwCreateWindowSurface(device_->instance(), window_, nullptr, &surface_), "glfwCreateWindowSurface");
}

void Window::create_descriptor_pool() {
  VkDescriptorPoolSize sizes{.type = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, .descriptorCount = 8};
  VkDescriptorPoolCreateInfo dinfo{.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                   .flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, .maxSets = 8,
                                   .poolSizeCount = 1, .pPoolSizes = &sizes};
  vk::check(vkCreateDescriptorPool(device_->handle(), &dinfo, nullptr, &descriptor_pool_), "vkCreateDescriptorPool");
}

void Window::setup_imgui(float scale) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  ini_name_ = ini_file_.string();
  io.IniFilename = ini_name_.empty() ? nullptr : ini_name_.c_str();
  apply_theme(scale);
  font_pixels_ = std::round(15.0f * scale);
  load_font(io, font_pixels_, {}, nullptr);
  imgui_glfw_ = ImGui_ImplGlfw_InitForVulkan(window_, true);
  io.BackendFlags &= ~ImGuiBackendFlags_HasSetMousePos;  // new_frame does not move the OS cursor
  init_imgui_vulkan();
}

// Dear ImGui's Vulkan backend, and the font atlas uploaded through the engine's submission path.
void Window::init_imgui_vulkan() {
  ImGui_ImplVulkan_InitInfo info{};
  info.Instance = device_->instance();
  info.PhysicalDevice = device_->physical();
  info.Device = device_->handle();
  info.QueueFamily = device_->queue_family();
  info.Queue = device_->queue();
  info.DescriptorPool = descriptor_pool_;
  info.Subpass = 0;
  info.MinImageCount = 2;
  // The backend reuses its vertex buffers after ImageCount frames; we have at most kSlots in flight.
  info.ImageCount = std::max<uint32_t>(uint32_t(images_.size()), kSlots);
  info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  info.CheckVkResultFn = check_imgui_vk;
  if (!ImGui_ImplVulkan_Init(&info, render_pass_)) throw Error("Dear ImGui's Vulkan backend failed to start");
  imgui_vulkan_ = true;
  Slot& s = slots_[0];
  vk::check(vkResetCommandPool(device_->handle(), s.pool, 0), "vkResetCommandPool");
  VkCommandBufferBeginInfo begin{.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  vk::check(vkBeginCommandBuffer(s.cb, &begin), "vkBeginCommandBuffer");
  ImGui_ImplVulkan_CreateFontsTexture(s.cb);
  vk::check(vkEndCommandBuffer(s.cb), "vkEndCommandBuffer");
  device_->submit_and_wait(s.cb);
  ImGui_ImplVulkan_DestroyFontUploadObjects();
}

void Window::add_glyphs(std::span<const uint32_t> codepoints) {
  if (codepoints.empty()) return;
  if (cjk_bytes_.empty())  // read when the first glyph is asked for; an unreadable file is left out
    for (const auto& f : cjk_fonts_) {
      std::ifstream in(f, std::ios::binary);
      std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in), {}};
      if (!bytes.empty()) cjk_bytes_.push_back(std::move(bytes));
    }
  if (cjk_bytes_.empty()) {
    glyphs_missing_ += uint32_t(codepoints.size());
    return;
  }
  for (uint32_t cp : codepoints)
    if (cp <= 0xFFFF) cjk_glyphs_.push_back(ImWchar(cp));
    else ++glyphs_missing_;  // past the 16-bit ImWchar of Debian's Dear ImGui
  std::sort(cjk_glyphs_.begin(), cjk_glyphs_.end());
  cjk_ranges_.clear();
  for (ImWchar c : cjk_glyphs_) {
    if (!cjk_ranges_.empty() && cjk_ranges_.back() + 1 == c) cjk_ranges_.back() = c;
    else cjk_ranges_.insert(cjk_ranges_.end(), {c, c});
  }
  cjk_ranges_.push_back(0);
  // The atlas again, with its texture: the frames in flight finish with the old one first. Dear ImGui 1.86's
  // backend frees its texture only when it shuts down, and its descriptor set only with the pool.
  wait_own_frames();
  ImGui_ImplVulkan_Shutdown();
  imgui_vulkan_ = false;
  vkDestroyDescriptorPool(device_->handle(), descriptor_pool_, nullptr);
  descriptor_pool_ = VK_NULL_HANDLE;
  create_descriptor_pool();
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  load_font(io, font_pixels_, cjk_bytes_, cjk_ranges_.data());
  init_imgui_vulkan();
  uint32_t missing = 0;
  for (ImWchar c : cjk_glyphs_) missing += io.Fonts->Fonts[0]->FindGlyphNoFallback(c) ? 0 : 1;
  glyphs_missing_ = missing;
}


Window::~Window() { release(); }

void Window::release() {
  if (presenter_.joinable()) {  // it presents a frame it was given, then stops
    {
      std::lock_guard lock(present_mutex_);
      presentation_.quit = true;
    }
    present_wake_.notify_all();
    presenter_.join();
  }
  if (device_) {
    wait_own_frames();
    vkDeviceWaitIdle(device_->handle());  // at exit: the engine's workers are gone
  }
  for (auto& t : encoders_) t.join();
  encoders_.clear();
  if (imgui_vulkan_) ImGui_ImplVulkan_Shutdown();
  if (imgui_glfw_) ImGui_ImplGlfw_Shutdown();
  if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  imgui_vulkan_ = imgui_glfw_ = false;
  for (auto& c : cursors_) {
    if (c) glfwDestroyCursor(c);
    c = nullptr;
  }
  if (device_) {
    const VkDevice dev = device_->handle();
    for (auto& r : readbacks_) {
      if (r.buffer) vkDestroyBuffer(dev, r.buffer, nullptr);
      if (r.memory) vkFreeMemory(dev, r.memory, nullptr);
    }
    readbacks_.clear();
    destroy_swapchain_images();
    for (auto sem : rendered_) vkDestroySemaphore(dev, sem, nullptr);
    rendered_.clear();
    if (swapchain_) vkDestroySwapchainKHR(dev, swapchain_, nullptr);
    swapchain_ = VK_NULL_HANDLE;
    for (Slot& s : slots_) {
      if (s.pool) vkDestroyCommandPool(dev, s.pool, nullptr);
      if (s.fence) vkDestroyFence(dev, s.fence, nullptr);
      if (s.acquired) vkDestroySemaphore(dev, s.acquired, nullptr);
      s = Slot{};
    }
    if (descriptor_pool_) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
    if (render_pass_) vkDestroyRenderPass(dev, render_pass_, nullptr);
    descriptor_pool_ = VK_NULL_HANDLE;
    render_pass_ = VK_NULL_HANDLE;
    if (surface_) vkDestroySurfaceKHR(device_->instance(), surface_, nullptr);
    surface_ = VK_NULL_HANDLE;
#if LS_HAVE_XCB
    if (xcb_) xcb_disconnect(static_cast<xcb_connection_t*>(xcb_));
    xcb_ = nullptr;
#endif
    device_.reset();
  }
  if (window_) glfwDestroyWindow(window_);
  window_ = nullptr;
  glfwTerminate();
}

// [SECTION] Platform input (GLFW callbacks, ImGui's per-frame input)

namespace {
Window& self(GLFWwindow* w) { return *static_cast<Window*>(glfwGetWindowUserPointer(w)); }
}  // namespace

void Window::on_drop_paths(GLFWwindow* w, int count, const char** paths) {
  for (int i = 0; i < count; ++i) self(w).dropped_.emplace_back(paths[i]);
}

void Window::on_framebuffer_size(GLFWwindow* w, int width, int height) {
  Window& s = self(w);
  s.fb_width_ = width;
  s.fb_height_ = height;
  {
    std::lock_guard lock(s.present_mutex_);
    s.presentation_.fb_width = width;
    s.presentation_.fb_height = height;
    ++s.presentation_.resizes;
  }
  s.present_wake_.notify_all();
}

void Window::on_window_size(GLFWwindow* w, int width, int height) {
  self(w).win_width_ = width;
  self(w).win_height_ = height;
}

void Window::on_iconify(GLFWwindow* w, int iconified) { self(w).iconified_ = iconified == GLFW_TRUE; }

// Moved to a screen of another scale: the font was made for the first one, so ImGui scales it.
void Window::on_content_scale(GLFWwindow* w, float sx, float sy) {
  ImGui::GetIO().FontGlobalScale = std::clamp(std::max(sx, sy), 1.0f, 4.0f) / self(w).font_scale_;
}

void Window::on_cursor_pos(GLFWwindow* w, double x, double y) {
  self(w).mouse_x_ = x;
  self(w).mouse_y_ = y;
}

void Window::on_cursor_enter(GLFWwindow* w, int entered) { self(w).hovered_ = entered == GLFW_TRUE; }

void Window::on_focus(GLFWwindow* w, int focused) { self(w).focused_ = focused == GLFW_TRUE; }

void Window::on_mouse_button(GLFWwindow* w, int button, int action, int) {
  if (action == GLFW_PRESS && button >= 0 && button < ImGuiMouseButton_COUNT) self(w).mouse_pressed_[button] = true;
}

void Window::poll() {
  glfwPollEvents();
  if (!dropped_.empty() && on_drop) on_drop(std::exchange(dropped_, {}));
}

// What ImGui_ImplGlfw_NewFrame does, from the state the callbacks keep (no X round trips).
void Window::new_frame() {
  ImGui_ImplVulkan_NewFrame();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = {float(win_width_), float(win_height_)};
  if (win_width_ > 0 && win_height_ > 0)
    io.DisplayFramebufferScale = {float(fb_width_) / float(win_width_), float(fb_height_) / float(win_height_)};
  const double now = glfwGetTime();
  io.DeltaTime = time_ > 0 ? std::max(float(now - time_), 1e-5f) : 1.0f / 60;
  time_ = now;
  bool any_down = false;
  for (int i = 0; i < ImGuiMouseButton_COUNT; ++i) {
    // A press and release within one frame still counts as held for this frame.
    io.MouseDown[i] = mouse_pressed_[i] || glfwGetMouseButton(window_, i) == GLFW_PRESS;
    mouse_pressed_[i] = false;
    any_down |= io.MouseDown[i];
  }
  const bool inside = hovered_ || any_down;  // a drag may leave the window
  io.MousePos = inside && mouse_x_ >= 0 ? ImVec2{float(mouse_x_), float(mouse_y_)} : ImVec2{-FLT_MAX, -FLT_MAX};
  update_mouse_cursor();
}

void Window::update_mouse_cursor() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.ConfigFlags & ImGuiConfigFlags_NoMouseCursorChange) return;
  const ImGuiMouseCursor c = ImGui::GetMouseCursor();
  if (c == cursor_) return;
  cursor_ = c;
  if (c == ImGuiMouseCursor_None || io.MouseDrawCursor) {
    glfwSetInputMode(window_, GLFW_CURSOR, GLFW_CURSOR_HIDDEN);
    return;
  }
  glfwSetCursor(window_, c >= 0 && cursors_[c] ? cursors_[c] : cursors_[ImGuiMouseCursor_Arrow]);
  glfwSetInputMode(window_, GLFW_CURSOR, GLFW_CURSOR_NORMAL);
}

}  // namespace ls::app
