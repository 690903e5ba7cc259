#include "gui.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include <imgui.h>

#include "error.h"
#include "gui_window.h"
#include "store/run_store.h"
#include "ui/glyphs.h"
#include "ui/studio.h"
#include "ui/ui_script.h"

namespace ls::app {

namespace {

using Clock = std::chrono::steady_clock;


// When a frame could not be presented (engine work on the queue, display not ready) try again soon.
constexpr auto kRetry = std::chrono::milliseconds(2);

std::pair<int, int> parse_geometry(const std::string& g) {
  if (g.empty()) return {0, 0};
  int w = 0, h = 0;
  if (std::sscanf(g.c_str(), "%dx%d", &w, &h) != 2 || w < 320 || h < 240)
    throw Error("--geometry: \"" + g + "\" is not WIDTHxHEIGHT (at least 320x240)");
  return {w, h};
}

// Milliseconds this thread has spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere): a
// busy machine lengthens frames without any UI code waiting, and the frame statistics tell the two apart.
double cpu_wait_ms() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return 0;
  unsigned long long on_cpu = 0, waiting = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2;
  std::fclose(f);
  return ok ? double(waiting) / 1e6 : 0;
}

}  // namespace

bool display_available() {
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

int run_gui(const GuiArgs& a) {
  if (!display_available())
    throw Error("no display: DISPLAY and WAYLAND_DISPLAY are unset (run `lorastudio --batch` to train headless)");
  const auto [width, height] = parse_geometry(a.geometry);
  std::optional<ui::UiScript> script;
  if (!a.ui_script.empty()) script = ui::UiScript::load(a.ui_script);
  const std::filesystem::path store = store::path_or_default(a.store);
  std::filesystem::create_directories(store.parent_path());
  Window window({.width = width, .height = height, .device = a.device, .validation = a.validation,
                 .ini_file = store.parent_path() / "imgui.ini"});
  int code = 0;
  {
    ui::Studio studio(window.device(), {.store = store});
    window.on_drop = [&](std::vector<std::filesystem::path> paths) { studio.drop(paths); };
    const ui::ScriptHost host{.request_screenshot = [&](const std::filesystem::path& f) { window.request_screenshot(f); },
                              .screenshot_written = [&](const std::filesystem::path& f) { return window.screenshot_written(f); },
                              .resize = [&](int w, int h) { window.set_size(w, h); }};
    // At most one frame per display refresh: frames that need no drawing (unchanged) do not wait for
    // the display, and software devices draw on the CPU cores that also train.
    const auto min_frame = std::chrono::microseconds(1'000'000 / window.refresh_rate());
    std::string cjk_fonts;
    for (const auto& f : window.cjk_fonts()) cjk_fonts += (cjk_fonts.empty() ? "" : ", ") + f.string();
    ui::set_glyph_report(cjk_fonts, 0);
    while (!window.should_close() && !studio.quit_requested()) {
      const auto t0 = Clock::now();
      const double waited0 = cpu_wait_ms();
      window.poll();
      if (const auto glyphs = ui::take_new_glyphs(); !glyphs.empty()) {  // what the last frame showed
        window.add_glyphs(glyphs);
        ui::set_glyph_report(cjk_fonts, window.glyphs_missing());
      }
      if (window.minimized()) {  // nothing to draw; the workers' events wait in their queue
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      window.new_frame();
      if (script) script->before_frame(ImGui::GetIO(), studio, host);
      ImGui::NewFrame();
      studio.frame();
      ImGui::Render();
      const auto shown = window.present(ImGui::GetDrawData());
      const auto t1 = Clock::now();
      studio.note_frame(std::chrono::duration<double, std::milli>(t1 - t0).count(), cpu_wait_ms() - waited0,
                        shown == Window::Shown::presented, shown != Window::Shown::no);
      if (auto e = window.take_screenshot_error(); !e.empty()) std::fprintf(stderr, "lorastudio: screenshot: %s\n", e.c_str());
      if (script && script->done()) break;
      if (shown == Window::Shown::no) std::this_thread::sleep_for(kRetry);
      else if (t1 - t0 < min_frame) std::this_thread::sleep_until(t0 + min_frame);
    }
    window.on_drop = nullptr;
    if (script && script->failed()) {
      std::fprintf(stderr, "lorastudio: %s\n", script->error().c_str());
      code = 1;
    }
  }  // the studio stops its workers (a training run writes its checkpoint) before the window goes
  return code;
}

}  // namespace ls::app
