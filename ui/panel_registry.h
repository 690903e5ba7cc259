#pragma once
// The panel registry: one row per panel. The View menu, the default layout, the settings' "panels"
// object and the frame loop are all made from this table (ui/panel_registry.cpp), so adding a panel is
// one new file (ui/<name>_panel.cpp) and one row.
#include <map>
#include <string>
#include <vector>

#include "ui/layout.h"
#include "ui/panels.h"

namespace ls::ui {

struct Panel {
  const char* title;  // window title and View menu item; imgui.ini keeps the window's place under it
  const char* key;    // its open flag's key in the settings' "panels" object (keep it: users' files have it)
  Tile tile;          // where the default layout puts it
  void (*draw)(PanelContext& ctx, const char* title, bool* p_open);
  bool open = true;
};

// The rows, in the order the View menu lists them and the frame loop draws them.
std::vector<Panel> make_panels();

// The open flags by settings key, and back; keys of no panel are left alone.
std::map<std::string, bool> open_flags(const std::vector<Panel>& panels);
void set_open_flags(std::vector<Panel>& panels, const std::map<std::string, bool>& open);

}  // namespace ls::ui
