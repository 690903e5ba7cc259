#pragma once
// What a panel hands back each frame: commands for the studio, and the screen rectangles of its
// interactive items by name, so that the --ui-script driver (ui/ui_script.h) can move the mouse onto
// them and click exactly as a user would.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <imgui.h>

#include "ui/views.h"

namespace ls::ui {

struct ItemRect {
  ImVec2 min, max;
  bool visible = false;
  int frame = -1;   // ImGui::GetFrameCount() when it was drawn
  int steady = 0;   // frames in a row it was drawn at this place (a window that just appeared may move)
};

class PanelIo {
 public:
  void send(Command c) { commands_.push_back(std::move(c)); }
  std::vector<Command> take_commands() { return std::exchange(commands_, {}); }

  // Names the item ImGui drew last (a button, an input, a checkbox). The item the script wants to
  // click next is scrolled into view, as a user would scroll to it.
  void tag(std::string_view name) {
    auto& r = items_[std::string(name)];
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    const int frame = ImGui::GetFrameCount();
    const bool same = r.frame == frame - 1 && r.min.x == min.x && r.min.y == min.y && r.max.x == max.x && r.max.y == max.y;
    r = {min, max, ImGui::IsItemVisible(), frame, same ? r.steady + 1 : 0};
    if (!r.visible && name == wanted_) ImGui::SetScrollHereY(0.5f);
  }
  // The item a script is about to click ("" for none).
  void want(std::string_view name) { wanted_ = name; }
  // The item drawn under that name in the latest frame that drew it; nullptr if never.
  const ItemRect* item(std::string_view name) const {
    auto it = items_.find(std::string(name));
    return it == items_.end() ? nullptr : &it->second;
  }

 private:
  std::vector<Command> commands_;
  std::map<std::string, ItemRect> items_;
  std::string wanted_;
};

}  // namespace ls::ui
