// [SECTION] Evaluate panel: a run's adapter and the base model answering the run's held-out validation
// examples side by side (started from the Runs panel's Evaluate), filled in as the replies come, with the
// reference answer of each example; the file the rows were written to; stop; the evaluation's settings.
#include <algorithm>
#include <cfloat>
#include <string>

#include <imgui.h>

#include "ui/glyphs.h"
#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

// A cell's text, wrapped to the column, at most a few lines tall (a tooltip shows all of it).
void cell_text(const std::string& text, bool dim = false) {
  note_glyphs(text);
  constexpr size_t kShown = 600;  // bytes shown in the cell; long replies are cut (the tooltip and file have all)
  std::string shown = text.size() > kShown ? text.substr(0, kShown) + "..." : text;
  if (dim) ImGui::PushStyleColor(ImGuiCol_Text, kDim);
  ImGui::TextWrapped("%s", shown.c_str());
  if (dim) ImGui::PopStyleColor();
  if (text.size() > kShown && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void reply_cell(const EvalView& e, ChatSide side, size_t row) {
  if (!e.answered[side].empty() && !e.answered[side][row]) {
    ImGui::TextColored(kDim, e.running ? "..." : "-");
    return;
  }
  const infer::EvalReply& r = side == kTuned ? e.rows[row].reply : e.rows[row].base;
  cell_text(r.text);
  ImGui::TextColored(kDim, "%u tokens, %s", r.new_tokens, r.stop.c_str());
}

}  // namespace

void draw_eval_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const EvalView& e = ctx.eval;
  EvalSettings& s = ctx.eval_settings;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  ImGui::BeginDisabled(e.running);
  int max_tokens = int(s.max_tokens);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  if (ImGui::InputInt("max new tokens", &max_tokens, 16, 64)) s.max_tokens = uint32_t(std::clamp(max_tokens, 1, 8192));
  io.tag("eval.max_tokens");
  tooltip("New tokens a reply may have (greedy decoding: the same replies every time).");
  same_line_if_fits(button_width("compare with the base model") + ImGui::GetFrameHeight());
  ImGui::Checkbox("compare with the base model", &s.compare_base);
  io.tag("eval.compare_base");
  tooltip("The base model answers every example too, beside the adapter.");
  ImGui::EndDisabled();
  if (e.running) {
    same_line_if_fits(button_width("Stop"));
    if (ImGui::Button("Stop")) io.send(cmd::StopEvaluation{});
    io.tag("eval.stop");
  }

  if (e.run == 0) {
    ImGui::TextColored(kDim, "Select a finished run in Runs and click Evaluate: its adapter%s answers each example the "
                             "run held out for validation.",
                       s.compare_base ? " and the base model" : "");
    ImGui::End();
    return;
  }
  ImGui::Text("%s: %zu held-out examples", e.run_name.c_str(), e.rows.size());
  if (e.running) {
    const float f = e.wanted ? float(e.replies) / float(e.wanted) : 0.0f;
    const std::string label = e.wanted ? std::to_string(e.replies) + " / " + std::to_string(e.wanted) + " replies"
                                       : std::string("finding the held-out examples...");
    ImGui::ProgressBar(f, ImVec2(-FLT_MIN, 0), label.c_str());
  } else if (!e.error.empty()) {
    ImGui::TextColored(e.error == "stopped" ? kWarn : kBad, "%s", e.error == "stopped" ? "Stopped: not written." : e.error.c_str());
  } else if (!e.saved.empty()) {
    ImGui::TextColored(kDim, "%s", e.summary.c_str());
    ImGui::TextColored(kDim, "Written to %s", e.saved.string().c_str());
    same_line_if_fits(button_width("Copy path"));
    if (ImGui::SmallButton("Copy path")) ImGui::SetClipboardText(e.saved.string().c_str());
    io.tag("eval.copy_path");
  }

  // Pages of rows: wrapped cells cost their text's length every frame, and a validation set may be thousands.
  constexpr size_t kPage = 50;
  const size_t pages = std::max<size_t>(1, (e.rows.size() + kPage - 1) / kPage);
  int& page = ctx.state.eval.page;
  page = std::clamp(page, 0, int(pages) - 1);
  if (pages > 1) {
    ImGui::BeginDisabled(page == 0);
    if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) --page;
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Text("rows %zu-%zu of %zu", size_t(page) * kPage + 1, std::min(e.rows.size(), size_t(page + 1) * kPage),
                e.rows.size());
    ImGui::SameLine();
    ImGui::BeginDisabled(size_t(page) + 1 >= pages);
    if (ImGui::ArrowButton("##next", ImGuiDir_Right)) ++page;
    ImGui::EndDisabled();
  }
  const size_t first = size_t(page) * kPage, end = std::min(e.rows.size(), first + kPage);

  const int columns = e.compared ? 5 : 4;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("eval", columns, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("line", ImGuiTableColumnFlags_WidthStretch, 0.2f);
    ImGui::TableSetupColumn("prompt", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("reference", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    if (e.compared) ImGui::TableSetupColumn("base model", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("adapter", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableHeadersRow();
    for (size_t i = first; i < end; ++i) {
      const infer::EvalRow& r = e.rows[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(kDim, "%zu", r.line);
      ImGui::TableNextColumn();
      cell_text(r.prompt);
      ImGui::TableNextColumn();
      cell_text(r.reference.empty() ? std::string("(none)") : r.reference, true);
      if (e.compared) {
        ImGui::TableNextColumn();
        reply_cell(e, kBase, i);
      }
      ImGui::TableNextColumn();
      reply_cell(e, kTuned, i);
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace ls::ui
