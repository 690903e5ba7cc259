#include "ui/layout.h"

#include <cmath>

#include "ui/panel_registry.h"

namespace ls::ui {

void place_window(const WindowPlace& place) {
  const ImGuiCond cond = place.force ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
  ImGui::SetNextWindowPos(place.pos, cond);
  ImGui::SetNextWindowSize(place.size, cond);
}

std::vector<WindowPlace> Layout::places(std::span<const Panel> panels) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec2 display = vp->WorkSize;
  const bool resized = last_display_.x > 0 && (display.x != last_display_.x || display.y != last_display_.y);
  last_display_ = display;
  const bool force = tile_ || resized;
  tile_ = false;
  const float status = ImGui::GetFrameHeight();
  const float w = display.x, h = display.y - status;

  constexpr int kColumns = int(std::size(kColumnWidths));
  float x[kColumns + 1] = {0};  // left edges; floored widths, the last column takes the rest
  for (int c = 0; c < kColumns; ++c) x[c + 1] = c + 1 < kColumns ? x[c] + std::floor(w * kColumnWidths[c]) : w;
  int last[kColumns];  // each column's last panel, which takes what is left of the column
  for (int c = 0; c < kColumns; ++c) last[c] = -1;
  for (size_t i = 0; i < panels.size(); ++i)
    if (!panels[i].tile.floating) last[panels[i].tile.column] = int(i);

  // Heights are fractions of their column; where they add up to more than 1 (a panel was added to a
  // full column), all of them shrink to fit.
  float sum[kColumns] = {0};
  for (const Panel& p : panels)
    if (!p.tile.floating) sum[p.tile.column] += p.tile.height;
  std::vector<WindowPlace> out;
  float y[kColumns] = {0};
  for (size_t i = 0; i < panels.size(); ++i) {
    if (panels[i].tile.floating) {
      const ImVec2 size{std::floor(w * 0.8f), std::floor(h * 0.8f)};
      out.push_back({{vp->WorkPos.x + std::floor((w - size.x) / 2), vp->WorkPos.y + std::floor((h - size.y) / 2)}, size, force});
      continue;
    }
    const int c = panels[i].tile.column;
    const float scale = sum[c] > 1.001f ? 1 / sum[c] : 1;
    const float ph = last[c] == int(i) ? h - y[c] : std::floor(h * panels[i].tile.height * scale);
    out.push_back({{vp->WorkPos.x + x[c], vp->WorkPos.y + y[c]}, {x[c + 1] - x[c], ph}, force});
    y[c] += ph;
  }
  return out;
}

}  // namespace ls::ui
