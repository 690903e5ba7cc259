// [SECTION] Runs panel: every run of the run store (GUI and --batch runs alike, also one still running
// in another process, refreshed live); show a run's charts, compare two runs' loss, chat with a run's
// adapter, evaluate it on its held-out examples, export it, resume an interrupted one from its latest checkpoint.
#include <cfloat>

#include <imgui.h>

#include "ui/glyphs.h"
#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

ImVec4 status_color(store::RunStatus s) {
  switch (s) {
    case store::RunStatus::running: return kGood;
    case store::RunStatus::paused: return kWarn;
    case store::RunStatus::failed: return kBad;
    default: return kDim;
  }
}

// A run that ended early (failed, e.g. "interrupted" when its process died, or stopped) and has a
// checkpoint can go on from it; not while this window trains.
bool resumable(const RunsView& runs, const store::RunInfo& r, const TrainView& train) {
  const bool busy = train.state == TrainState::starting || train.state == TrainState::running ||
                    train.state == TrainState::paused || train.state == TrainState::stopping;
  if (busy || (r.status != store::RunStatus::failed && r.status != store::RunStatus::stopped)) return false;
  auto it = runs.checkpoints.find(r.id);
  return it != runs.checkpoints.end() && !it->second.empty();
}

}  // namespace

void draw_runs_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const RunsView& runs = ctx.runs;
  const TrainView& train = ctx.train;
  RunsPanelState& s = ctx.state.runs;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  const store::RunInfo* sel = s.selected ? runs.find(*s.selected) : nullptr;
  ImGui::BeginDisabled(!sel);
  if (ImGui::Button("Compare")) io.send(cmd::OverlayRun{runs.overlay == s.selected ? std::nullopt : s.selected});
  tooltip("Draw this run's loss beside the charted run's (click again to remove).");
  // Only a run that ended (finished, or stopped with its adapter written) has an adapter to use.
  const bool ended = sel && (sel->status == store::RunStatus::finished || sel->status == store::RunStatus::stopped);
  ImGui::BeginDisabled(!ended);
  same_line_if_fits(button_width("Chat with it"));
  if (ImGui::Button("Chat with it") && sel)
    io.send(cmd::UseAdapter{sel->out_dir / "adapter", sel->name + " (final)"});
  io.tag("runs.chat");
  tooltip("Use this run's final adapter in Chat.");
  same_line_if_fits(button_width("Evaluate"));
  if (ImGui::Button("Evaluate") && sel) io.send(cmd::EvaluateRun{sel->id});
  io.tag("runs.evaluate");
  tooltip("The adapter and the base model answer every example this run held out for validation, side by side with "
          "the reference answers (greedy); the rows are written to the run folder as eval-<time>.jsonl (as `lorastudio "
          "generate --prompts ... --compare-base`).");
  same_line_if_fits(button_width("Export adapter..."));
  if (ImGui::Button("Export adapter...") && sel) io.send(cmd::Browse{cmd::BrowseFor::export_adapter, sel->id});
  io.tag("runs.export");
  tooltip("Write the adapter as a PEFT folder (adapter_config.json, adapter_model.safetensors).");
  same_line_if_fits(button_width("Export merged..."));
  if (ImGui::Button("Export merged...") && sel) io.send(cmd::Browse{cmd::BrowseFor::export_merged, sel->id});
  io.tag("runs.export_merged");
  tooltip("Write the base model with the adapter merged into its weights: a model folder transformers loads "
          "without PEFT (as `lorastudio export --merge`).");
  same_line_if_fits(button_width("Export GGUF..."));
  if (ImGui::Button("Export GGUF...") && sel)
    io.send(cmd::Browse{cmd::BrowseFor::export_gguf, sel->id, model::GgufFileType(s.gguf_type)});
  io.tag("runs.export_gguf");
  tooltip("Write the files llama.cpp, Ollama and LM Studio load: the model with the adapter merged in "
          "(model-<type>.gguf, with its tokenizer and chat template), the adapter as a GGUF LoRA (adapter.gguf) and "
          "a Modelfile for `ollama create` (as `lorastudio export --gguf`).");
  const float type_w = ImGui::CalcTextSize("q4_k_m").x + ImGui::GetFrameHeight() * 2;
  same_line_if_fits(type_w);
  ImGui::SetNextItemWidth(type_w);
  ImGui::Combo("##gguf_type", &s.gguf_type, "f16\0bf16\0q8_0\0q4_k_m\0");
  io.tag("runs.gguf_type");
  tooltip("The merged model's weights: f16, bf16, q8_0, or q4_k_m (llama.cpp's Q4_K_M mix, about a third of "
          "f16's size) (as --gguf-type).");
  ImGui::EndDisabled();
  same_line_if_fits(button_width("Resume"));
  ImGui::BeginDisabled(!sel || !resumable(runs, *sel, train));
  if (ImGui::Button("Resume") && sel) io.send(cmd::ResumeRun{sel->id});
  io.tag("runs.resume");
  tooltip("Continue this interrupted run from its latest checkpoint, with its options, in its folder: the same "
          "run goes on (as `lorastudio --batch ... --resume <checkpoint>`).");
  ImGui::EndDisabled();
  ImGui::EndDisabled();

  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("runs", 6, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, 0.35f);
    ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch, 1.4f);
    ImGui::TableSetupColumn("status", ImGuiTableColumnFlags_WidthStretch, 0.7f);
    ImGui::TableSetupColumn("step", ImGuiTableColumnFlags_WidthStretch, 0.45f);
    ImGui::TableSetupColumn("loss", ImGuiTableColumnFlags_WidthStretch, 0.6f);
    ImGui::TableSetupColumn("started", ImGuiTableColumnFlags_WidthStretch, 0.8f);
    ImGui::TableHeadersRow();
    ImGuiListClipper clip;
    clip.Begin(int(runs.runs.size()));
    while (clip.Step()) {
      for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
        const auto& r = runs.runs[size_t(i)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const std::string id = std::to_string(r.id);
        const bool shown = runs.shown == r.id;
        if (ImGui::Selectable(id.c_str(), s.selected == r.id || shown, ImGuiSelectableFlags_SpanAllColumns)) {
          s.selected = r.id;
          io.send(cmd::ShowRun{r.id});
        }
        io.tag("runs.row." + id);
        if (ImGui::IsItemHovered() && (!r.error.empty() || !r.notes.empty())) {
          const std::string why = r.error + (r.error.empty() || r.notes.empty() ? "" : "\n") + r.notes;
          tooltip(why.c_str());
        }
        ImGui::TableNextColumn();
        note_glyphs(r.name);
        ImGui::TextUnformatted(r.name.c_str());
        if (!r.notes.empty()) {  // e.g. resumed at step N: the series joins there
          ImGui::SameLine();
          ImGui::TextColored(kDim, "(resumed)");
          if (ImGui::IsItemHovered()) tooltip(r.notes.c_str());
        }
        if (runs.overlay == r.id) {
          ImGui::SameLine();
          ImGui::TextColored(kDim, "(compared)");
        }
        ImGui::TableNextColumn();
        ImGui::TextColored(status_color(r.status), "%s", store::run_status_name(r.status));
        auto it = runs.metrics.find(r.id);
        ImGui::TableNextColumn();
        if (it != runs.metrics.end() && !it->second.empty()) {
          ImGui::Text("%lld", static_cast<long long>(it->second.back().step));
          ImGui::TableNextColumn();
          ImGui::Text("%.4f", it->second.back().loss);
        } else {
          ImGui::TextColored(kDim, "-");
          ImGui::TableNextColumn();
          ImGui::TextColored(kDim, "-");
        }
        ImGui::TableNextColumn();
        ImGui::TextColored(kDim, "%s", format_local_time(r.started_at.value_or(r.created_at)).c_str());
      }
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace ls::ui
