// [SECTION] Data panel: a JSONL file as the model will see it (template applied, trained tokens
// highlighted), its counts, and its problems with line numbers.
#include <imgui.h>

#include "ui/glyphs.h"
#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

// Wrapped text in pieces, the trained ones on a tinted background.
void draw_pieces(const std::vector<PreviewPiece>& pieces) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, line = ImGui::GetTextLineHeight();
  const ImU32 plain = ImGui::GetColorU32(ImGuiCol_Text), trained_text = IM_COL32(160, 235, 170, 255),
              trained_bg = IM_COL32(46, 110, 64, 150);
  float x = 0, y = 0;
  for (const auto& p : pieces) {
    note_glyphs(p.text);
    size_t i = 0;
    while (i < p.text.size()) {
      if (p.text[i] == '\n') {  // a visible mark, then a new line
        if (p.trained) dl->AddRectFilled({origin.x + x, origin.y + y}, {origin.x + x + 8, origin.y + y + line}, trained_bg);
        x = 0, y += line;
        ++i;
        continue;
      }
      size_t j = i;  // one word and the spaces after it
      while (j < p.text.size() && p.text[j] != '\n' && p.text[j] != ' ') ++j;
      while (j < p.text.size() && p.text[j] == ' ') ++j;
      const char* b = p.text.data() + i;
      const char* e = p.text.data() + j;
      ImVec2 size = ImGui::CalcTextSize(b, e);
      if (x > 0 && x + size.x > width) x = 0, y += line;
      if (p.trained) dl->AddRectFilled({origin.x + x, origin.y + y}, {origin.x + x + size.x, origin.y + y + line}, trained_bg);
      dl->AddText({origin.x + x, origin.y + y}, p.trained ? trained_text : plain, b, e);
      x += size.x;
      i = j;
    }
  }
  ImGui::Dummy({width, y + line});
}

}  // namespace

void draw_data_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const DataView& v = ctx.data;
  const ModelView& model = ctx.model;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  if (ImGui::Button("Open JSONL file...")) io.send(cmd::Browse{cmd::BrowseFor::data});
  io.tag("data.open");
  if (v.loaded || v.loading) {
    ImGui::SameLine();
    ImGui::TextColored(kDim, "%s", v.path.filename().string().c_str());
  }
  if (v.loading) ImGui::TextColored(kWarn, "Reading %s ...", v.path.string().c_str());
  if (!v.loaded) {
    if (!v.loading) {
      ImGui::TextWrapped("One JSON object per line: {\"text\"}, {\"prompt\", \"completion\"} or {\"messages\": "
                         "[{\"role\", \"content\"}, ...]}.");
      if (!model.loaded) ImGui::TextColored(kDim, "Open a model first: its tokenizer and chat template read the data.");
    }
    ImGui::End();
    return;
  }
  ImGui::Text("%s examples", format_count(v.examples).c_str());
  if (v.validation_examples) {
    ImGui::SameLine();
    ImGui::Text("(+ %s for validation)", format_count(v.validation_examples).c_str());
  }
  ImGui::SameLine();
  ImGui::TextColored(kDim, "|");
  ImGui::SameLine();
  ImGui::Text("%s tokens, %s trained", format_count(v.tokens).c_str(), format_count(v.trained_tokens).c_str());
  ImGui::SameLine();
  ImGui::TextColored(kDim, "| longest %s", format_count(v.longest).c_str());
  if (!v.problems.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kBad);
    const bool open = ImGui::TreeNodeEx("problems", ImGuiTreeNodeFlags_DefaultOpen, "%zu problem%s", v.problems.size(),
                                        v.problems.size() == 1 ? "" : "s");
    ImGui::PopStyleColor();
    if (open) {
      ImGuiListClipper clip;
      clip.Begin(int(v.problems.size()));
      while (clip.Step())
        for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) ImGui::TextWrapped("%s", v.problems[size_t(i)].c_str());
      ImGui::TreePop();
    }
  }
  ImGui::PushStyleColor(ImGuiCol_Text, kDim);
  ImGui::TextWrapped("First examples as the model sees them; trained tokens are green:");
  ImGui::PopStyleColor();
  if (ImGui::BeginChild("preview", {0, 0}, true)) {
    for (const auto& ex : v.preview) {
      ImGui::TextColored(kAccent, "line %zu", ex.line);
      ImGui::SameLine();
      ImGui::TextColored(kDim, "%zu tokens, %zu trained", ex.tokens, ex.trained);
      draw_pieces(ex.pieces);
      ImGui::Separator();
    }
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace ls::ui
