// [SECTION] Model panel: open a model folder (browser or drag-and-drop); what it is and what it takes.
#include <imgui.h>

#include "ui/glyphs.h"
#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

const char* architecture_label(model::Architecture a) {
  switch (a) {
    case model::Architecture::Qwen2: return "Qwen2";
    case model::Architecture::Qwen3: return "Qwen3";
    case model::Architecture::Phi3: return "Phi-3";
    case model::Architecture::Gemma3: return "Gemma 3";
    case model::Architecture::Llama: return "Llama";
    case model::Architecture::Mistral: return "Mistral";
  }
  return "?";
}

void row(const char* name, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextColored(kDim, "%s", name);
  ImGui::TableNextColumn();
  note_glyphs(value);
  ImGui::TextWrapped("%s", value.c_str());  // a long folder or template note wraps in a narrow panel
}

}  // namespace

void draw_model_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const ModelView& v = ctx.model;
  const MemoryView& memory = ctx.memory;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  if (ImGui::Button("Open model folder...")) io.send(cmd::Browse{cmd::BrowseFor::model});
  io.tag("model.open");
  const char* hint = "or drop a folder on the window";
  same_line_if_fits(ImGui::CalcTextSize(hint).x);
  ImGui::TextColored(kDim, "%s", hint);
  if (v.loading) {
    ImGui::TextColored(kWarn, "Loading %s ...", v.loading_dir.string().c_str());
  }
  if (!v.loaded) {
    if (!v.loading) {
      ImGui::TextWrapped("A Hugging Face model folder: config.json, *.safetensors and tokenizer.json "
                         "(Qwen2, Qwen3, Llama, Mistral, Gemma 3 and Phi-3 architectures).");
      ImGui::Spacing();
      if (ImGui::Button("Try the demo")) io.send(cmd::TryDemo{});
      io.tag("model.demo");
      ImGui::SameLine();
      ImGui::TextColored(kDim, "no download needed");
      ImGui::TextWrapped("A tiny built-in model with random weights learns a small data set's skill (sorting questions "
                         "in JSON) in a few minutes; then it and the base model answer a question it has not seen. "
                         "For real work download a model, e.g. Qwen/Qwen2.5-0.5B-Instruct from Hugging Face.");
    }
    ImGui::End();
    return;
  }
  const LoadedModel& m = *v.loaded;
  const auto& c = m.model.config;
  if (ImGui::BeginTable("model", 2, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
    ImGui::TableSetupColumn("k", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("v", ImGuiTableColumnFlags_WidthStretch);
    row("Folder", m.model.dir.string());
    row("Architecture", c.architecture_name.empty() ? architecture_label(c.arch) : c.architecture_name);
    row("Parameters", format_count(m.parameters) + " (" + std::to_string(c.num_layers) + " layers, hidden " +
                          std::to_string(c.hidden_size) + ", " + std::to_string(c.num_heads) + "/" +
                          std::to_string(c.num_kv_heads) + " heads)");
    row("Weights", m.dtype + ", " + format_bytes(m.weight_bytes) + " on the GPU");
    row("Context", format_count(c.max_position_embeddings) + " tokens, vocabulary " + format_count(c.vocab_size));
    // name(): the recognised family ("Phi-3"), or "the model's own template" when none is recognised.
    const std::string name(m.files.chat.name());
    const bool family = name != "the model's own template";
    row("Chat template",
        m.files.chat.runs_model_template()
            ? (family ? name + ": the model's own template" : name) + ", run as transformers runs it"
            : name + ", rendered by lorastudio as that family (the folder has no template it can run)");
    if (memory.device_local)
      row("GPU memory", format_bytes(memory.used) + " in use of " + format_bytes(memory.device_local));
    ImGui::EndTable();
  }
  for (const auto& w : m.files.warnings) ImGui::TextColored(kWarn, "%s", w.c_str());
  ImGui::End();
}

}  // namespace ls::ui
