// Studio: the menu bar, the status bar, the error dialog and the file browser, around the panels.
#include <algorithm>
#include <cstdio>

#include <imgui.h>

#include "ui/glyphs.h"
#include "ui/studio.h"
#include "ui/widgets.h"

namespace ls::ui {

void Studio::draw_menu() {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open model folder...")) io_.send(cmd::Browse{cmd::BrowseFor::model});
    if (ImGui::MenuItem("Open data file...")) io_.send(cmd::Browse{cmd::BrowseFor::data});
    if (ImGui::MenuItem("Try the demo")) io_.send(cmd::TryDemo{});
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) quit_ = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (Panel& p : panels_) ImGui::MenuItem(p.title, nullptr, &p.open);
    ImGui::Separator();
    if (ImGui::MenuItem("Tile windows")) layout_.tile();
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("lorastudio " LS_VERSION " - LoRA fine-tuning on any Vulkan GPU");
    ImGui::TextColored(kDim, "Device: %s (%s)", device_.report().name.c_str(), device_.report().type.c_str());
    ImGui::TextColored(kDim, "Run store: %s", options_.store.string().c_str());
    ImGui::EndMenu();
  }
  if (ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed('Q', false)) quit_ = true;  // the GLFW backend's key codes
  ImGui::EndMainMenuBar();
}

void Studio::draw_status_bar() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float h = ImGui::GetFrameHeight();
  ImGui::SetNextWindowPos({vp->WorkPos.x, vp->WorkPos.y + vp->WorkSize.y - h});
  ImGui::SetNextWindowSize({vp->WorkSize.x, h});
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, {ImGui::GetStyle().FramePadding.x * 2, ImGui::GetStyle().FramePadding.y});
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoNav;
  if (ImGui::Begin("##status", nullptr, flags)) {
    char right[160];
    const size_t v = device_.validation_messages();
    std::snprintf(right, sizeof right, "%s%s   %s   %.0f draws/s", v ? "validation messages: " : "",
                  v ? std::to_string(v).c_str() : "", device_.report().name.c_str(), frame_stats_.draws_per_s);
    const float w = ImGui::CalcTextSize(right).x;
    const float right_x = std::max(ImGui::GetWindowWidth() - w - ImGui::GetStyle().WindowPadding.x,
                                   ImGui::GetCursorPosX() + ImGui::GetFontSize() * 8);
    // The status, cut where the device's line starts; all of it when hovered.
    const float status_w = right_x - ImGui::GetCursorPosX() - ImGui::GetFontSize();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    note_glyphs(status_);
    ImGui::PushClipRect(at, {at.x + status_w, at.y + h}, true);
    ImGui::TextUnformatted(status_.c_str());
    ImGui::PopClipRect();
    if (ImGui::CalcTextSize(status_.c_str()).x > status_w && ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      ImGui::TextUnformatted(status_.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    ImGui::SameLine(right_x);
    ImGui::TextColored(v ? kBad : kDim, "%s", right);
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
}

void Studio::draw_error_dialog() {
  if (errors_.empty()) return;
  if (!ImGui::IsPopupOpen("Error###error")) ImGui::OpenPopup("Error###error");
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos({display.x * 0.5f, display.y * 0.4f}, ImGuiCond_Appearing, {0.5f, 0.5f});
  ImGui::SetNextWindowSizeConstraints({ImGui::GetFontSize() * 24, 0}, {display.x * 0.7f, display.y * 0.8f});
  if (ImGui::BeginPopupModal("Error###error", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    const auto& [title, message] = errors_.front();
    ImGui::TextColored(kBad, "%s", title.c_str());
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
    ImGui::TextUnformatted(message.c_str());
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    if (ImGui::Button("OK", {ImGui::GetFontSize() * 6, 0}) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
      errors_.erase(errors_.begin());
      ImGui::CloseCurrentPopup();
    }
    io_.tag("error.ok");
    ImGui::SameLine();
    if (ImGui::Button("Copy")) ImGui::SetClipboardText((title + ": " + message).c_str());
    ImGui::EndPopup();
  }
}

void Studio::draw_browser() {
  if (errors_.size()) return;  // the error dialog first
  auto chosen = browser_.draw(io_);
  if (!chosen) return;
  switch (browsing_.purpose) {
    case cmd::BrowseFor::model: open_model(*chosen); break;
    case cmd::BrowseFor::data: open_data(*chosen); break;
    case cmd::BrowseFor::export_adapter: export_adapter(browsing_.run, *chosen, store::ExportFormat::peft); break;
    case cmd::BrowseFor::export_merged: export_adapter(browsing_.run, *chosen, store::ExportFormat::merged); break;
    case cmd::BrowseFor::export_gguf:
      export_adapter(browsing_.run, *chosen, store::ExportFormat::gguf, browsing_.gguf_type);
      break;
  }
}

}  // namespace ls::ui
