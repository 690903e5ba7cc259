// [SECTION] GPU timing panel: GPU time per op group of every profiled step (timestamps around each
// dispatch) as stacked bars over the recent steps, the latest step's groups sorted with their share,
// and device memory in use by category.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include <imgui.h>

#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

constexpr ImU32 kGroupColors[] = {IM_COL32(78, 156, 255, 255), IM_COL32(255, 140, 66, 255), IM_COL32(91, 209, 122, 255),
                                  IM_COL32(255, 92, 138, 255), IM_COL32(181, 140, 255, 255), IM_COL32(242, 209, 75, 255),
                                  IM_COL32(90, 210, 220, 255), IM_COL32(200, 200, 200, 255)};

ImU32 group_color(size_t i) { return kGroupColors[i % std::size(kGroupColors)]; }

double total_ms(const store::MetricRow& r) {
  return std::accumulate(r.gpu_ms.begin(), r.gpu_ms.end(), 0.0, [](double a, const store::GpuTime& g) { return a + g.ms; });
}

void draw_bars(const std::vector<const store::MetricRow*>& rows, const std::vector<std::string>& groups, ImVec2 size) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("bars", size);
  const bool hovered = ImGui::IsItemHovered();
  double top = 0;
  for (const auto* r : rows) top = std::max(top, total_ms(*r));
  if (!(top > 0)) top = 1;
  const float left = ImGui::CalcTextSize("000.0 ms").x + 6, bottom = ImGui::GetTextLineHeight() + 4;
  const ImVec2 a{p0.x + left, p0.y + 4}, b{p0.x + size.x, p0.y + size.y - bottom};
  dl->AddRectFilled(a, b, IM_COL32(28, 30, 34, 255));
  char buf[48];
  for (double f : {0.0, 0.5, 1.0}) {
    const float y = b.y - float(f) * (b.y - a.y);
    dl->AddLine({a.x, y}, {b.x, y}, IM_COL32(255, 255, 255, 28));
    std::snprintf(buf, sizeof buf, "%.1f ms", top * f);
    dl->AddText({p0.x, y - ImGui::GetTextLineHeight() * 0.5f}, IM_COL32(200, 200, 200, 255), buf);
  }
  const float slot = (b.x - a.x) / float(std::max<size_t>(rows.size(), 1));
  const float bar = std::max(slot * 0.75f, 1.0f);
  int hover = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const float x = a.x + float(i) * slot + (slot - bar) * 0.5f;
    float y = b.y;
    for (const auto& g : rows[i]->gpu_ms) {
      const size_t gi = size_t(std::find(groups.begin(), groups.end(), g.group) - groups.begin());
      const float h = float(g.ms / top) * (b.y - a.y);
      dl->AddRectFilled({x, y - h}, {x + bar, y}, group_color(gi));
      y -= h;
    }
    const ImVec2 m = ImGui::GetIO().MousePos;
    if (hovered && m.x >= a.x + float(i) * slot && m.x < a.x + float(i + 1) * slot) hover = int(i);
  }
  if (!rows.empty()) {
    std::snprintf(buf, sizeof buf, "step %lld", static_cast<long long>(rows.front()->step));
    dl->AddText({a.x, b.y + 2}, IM_COL32(200, 200, 200, 255), buf);
    std::snprintf(buf, sizeof buf, "step %lld", static_cast<long long>(rows.back()->step));
    dl->AddText({b.x - ImGui::CalcTextSize(buf).x, b.y + 2}, IM_COL32(200, 200, 200, 255), buf);
  }
  if (hover >= 0) {
    const auto& r = *rows[size_t(hover)];
    dl->AddRect({a.x + float(hover) * slot, a.y}, {a.x + float(hover + 1) * slot, b.y}, IM_COL32(255, 255, 255, 120));
    ImGui::BeginTooltip();
    ImGui::Text("step %lld: %.2f ms on the GPU", static_cast<long long>(r.step), total_ms(r));
    for (const auto& g : r.gpu_ms) ImGui::Text("  %-10s %8.3f ms", g.group.c_str(), g.ms);
    ImGui::EndTooltip();
  }
}

// Device memory as one stacked bar and a legend with the bytes of each category.
void draw_memory(const MemoryView& m) {
  heading("Device memory in use");
  const uint64_t known = m.weights + m.lora + m.kv_cache;
  const struct {
    const char* name;
    uint64_t bytes;
    ImU32 color;
  } parts[] = {{"weights", m.weights, group_color(0)},
               {"activations, scratch", m.used > known ? m.used - known : 0, group_color(1)},
               {"KV cache", m.kv_cache, group_color(2)},
               {"LoRA state", m.lora, group_color(4)}};
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetTextLineHeight();
  ImGui::Dummy({w, h});
  dl->AddRectFilled(p0, {p0.x + w, p0.y + h}, IM_COL32(28, 30, 34, 255), 3);
  float x = p0.x;
  for (const auto& part : parts) {
    const float pw = m.used ? float(double(part.bytes) / double(m.used)) * w : 0;
    if (pw >= 1) dl->AddRectFilled({x, p0.y}, {x + pw, p0.y + h}, part.color);
    x += pw;
  }
  float line_x = 0;
  for (size_t i = 0; i < std::size(parts); ++i) {
    const std::string text = std::string(parts[i].name) + " " + format_bytes(parts[i].bytes);
    const float item_w = h + 4 + ImGui::CalcTextSize(text.c_str()).x + ImGui::GetStyle().ItemSpacing.x * 2;
    if (i && line_x + item_w < w) ImGui::SameLine(0, ImGui::GetStyle().ItemSpacing.x * 2);
    else line_x = 0;
    line_x += item_w;
    ImGui::ColorButton(parts[i].name, ImGui::ColorConvertU32ToFloat4(parts[i].color), ImGuiColorEditFlags_NoTooltip, {h, h});
    ImGui::SameLine(0, 4);
    ImGui::TextUnformatted(text.c_str());
  }
  ImGui::TextColored(kDim, "%s allocated in %s of blocks; the device has %s", format_bytes(m.used).c_str(),
                     format_bytes(m.reserved).c_str(), format_bytes(m.device_local).c_str());
  tooltip("LoRA state: adapter, gradients and two AdamW moments while training, plus the chat's adapter. "
          "KV cache: the chat's generators. Activations: the rest the engine allocated (training activations, "
          "prefill scratch, staging).");
}

}  // namespace

void draw_gpu_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const RunsView& runs = ctx.runs;
  const MemoryView& memory = ctx.memory;
  GpuPanelState& s = ctx.state.gpu;
  PanelIo& io = ctx.io;
  s.groups_shown = 0;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  std::vector<const store::MetricRow*> rows;
  if (runs.shown)
    if (auto it = runs.metrics.find(*runs.shown); it != runs.metrics.end())
      for (const auto& r : it->second)
        if (!r.gpu_ms.empty()) rows.push_back(&r);
  if (rows.size() > size_t(s.recent_steps)) rows.erase(rows.begin(), rows.end() - s.recent_steps);
  if (rows.empty()) {
    ImGui::TextWrapped("No GPU timings for this run: tick \"GPU timing\" in Train before starting (or --profile "
                       "with --batch).");
  } else {
    std::vector<std::string> groups;  // in the trainer's order
    for (const auto* r : rows)
      for (const auto& g : r->gpu_ms)
        if (std::find(groups.begin(), groups.end(), g.group) == groups.end()) groups.push_back(g.group);
    for (size_t i = 0; i < groups.size(); ++i) {
      if (i) ImGui::SameLine();
      ImGui::ColorButton(groups[i].c_str(), ImGui::ColorConvertU32ToFloat4(group_color(i)), ImGuiColorEditFlags_NoTooltip,
                         {ImGui::GetTextLineHeight(), ImGui::GetTextLineHeight()});
      ImGui::SameLine(0, 4);
      ImGui::TextUnformatted(groups[i].c_str());
    }
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float table_w = std::min(avail.x * 0.42f, ImGui::GetFontSize() * 17);
    // Tall enough for the table of the latest step (header, groups, total) without scrolling.
    const float row = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y + 1;
    const float bars_h = std::max({avail.y * 0.48f, ImGui::GetFontSize() * 6, row * float(groups.size() + 2) + 4});
    draw_bars(rows, groups, {avail.x - table_w - ImGui::GetStyle().ItemSpacing.x, bars_h});
    io.tag("gpu.bars");
    ImGui::SameLine();
    // The latest step, sorted.
    const auto& last = *rows.back();
    auto sorted = last.gpu_ms;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
    const double total = total_ms(last);
    if (ImGui::BeginTable("groups", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_ScrollY,
                          {table_w, bars_h})) {
      ImGui::TableSetupColumn("group");
      ImGui::TableSetupColumn("ms", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableSetupColumn("share", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableHeadersRow();
      for (const auto& g : sorted) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(g.group.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", g.ms);
        ImGui::TableNextColumn();
        ImGui::Text("%4.1f%%", total > 0 ? 100 * g.ms / total : 0.0);
      }
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(kDim, "step %lld", static_cast<long long>(last.step));
      ImGui::TableNextColumn();
      ImGui::Text("%.3f", total);
      ImGui::EndTable();
    }
    s.groups_shown = sorted.size();
  }
  draw_memory(memory);
  ImGui::End();
}

}  // namespace ls::ui
