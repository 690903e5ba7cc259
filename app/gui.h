#pragma once
// The desktop app (the default when lorastudio runs without a command): one window, the engine on the
// window's Vulkan device, the panels of ui/ over it.
#include <string>

namespace ls::app {

struct GuiArgs {
  std::string device;       // as --device
  std::string store;        // the run store (default: store::default_store_path())
  std::string ui_script;    // a scenario to run (ui/ui_script.h), for tests and demos
  std::string geometry;     // "WIDTHxHEIGHT" (default: 85% of the screen)
  bool validation = false;  // the Khronos validation layer (also LORASTUDIO_VALIDATION=1)
};

// DISPLAY or WAYLAND_DISPLAY is set.
bool display_available();
// Runs the window until it is closed (or the script ends). Returns the exit code: 0, or 1 when the
// script failed. Throws ls::Error when there is no display, Vulkan driver or usable device.
int run_gui(const GuiArgs& args);

}  // namespace ls::app
