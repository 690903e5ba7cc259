#pragma once
// The default arrangement of the panels' windows: columns under the menu bar and above the status bar,
// each panel at its registry row's Tile (ui/panel_registry.cpp). Windows go there on first use, and again
// when the display is resized or View > Tile windows is picked; otherwise they stay where the user put
// them (imgui.ini keeps that).
#include <span>
#include <vector>

#include <imgui.h>

namespace ls::ui {

struct Panel;

// A panel's place in the default arrangement.
struct Tile {
  int column = 0;       // 0, 1, 2: left to right (kColumnWidths)
  float height = 0.5f;  // fraction of the column's height (scaled down where a column's add up past 1);
                        // the column's last panel takes what is left
  bool floating = false;  // in no column: centred over the others, most of the display
};

// Fractions of the display's width; the last column takes what is left.
inline constexpr float kColumnWidths[] = {0.28f, 0.40f, 0.32f};

// Where a window goes unless the user moved it; `force` re-tiles.
struct WindowPlace {
  ImVec2 pos, size;
  bool force = false;
};
// Applies to the ImGui::Begin that comes next.
void place_window(const WindowPlace& place);

class Layout {
 public:
  void tile() { tile_ = true; }  // View > Tile windows
  // This frame's places of `panels`, in their order (call once per frame, before the panels are drawn).
  std::vector<WindowPlace> places(std::span<const Panel> panels);

 private:
  ImVec2 last_display_{0, 0};
  bool tile_ = false;
};

}  // namespace ls::ui
