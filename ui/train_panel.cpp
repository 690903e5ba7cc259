// [SECTION] Train panel: every option of `lorastudio --batch` (tooltips: the same help texts), Start /
// Pause / Resume / Stop / Checkpoint now, progress with ETA and tokens/s.
#include <cfloat>
#include <cmath>
#include <optional>
#include <string>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "model/layer_spec.h"
#include "train/option_help.h"
#include "ui/panels.h"
#include "ui/train_memory.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

namespace h = train::option_help;

// A row of the options table: the label with the option's help as its tooltip, then the widget's cell.
void label(const char* text, const train::OptionHelp& help) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(text);
  const std::string tip = std::string(help.text) + "\n(" + help.flag + ")";
  tooltip(tip.c_str());
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-FLT_MIN);
}

bool u32(const char* text, const train::OptionHelp& help, uint32_t* v, PanelIo& io, const char* tag) {
  label(text, help);
  const uint32_t step = 1;
  bool changed = ImGui::InputScalar((std::string("##") + tag).c_str(), ImGuiDataType_U32, v, &step);
  io.tag(tag);
  return changed;
}

bool f32(const char* text, const train::OptionHelp& help, float* v, const char* format, PanelIo& io, const char* tag) {
  label(text, help);
  bool changed = ImGui::InputFloat((std::string("##") + tag).c_str(), v, 0, 0, format);
  io.tag(tag);
  return changed;
}

bool flag(const char* text, const train::OptionHelp& help, bool* v, PanelIo& io, const char* tag) {
  label(text, help);
  bool changed = ImGui::Checkbox((std::string("##") + tag).c_str(), v);
  io.tag(tag);
  return changed;
}

bool begin_options(const char* id) {
  return ImGui::BeginTable(id, 2, ImGuiTableFlags_SizingStretchProp);
}

void end_options() { ImGui::EndTable(); }

void draw_controls(const TrainView& v, bool can_start, const char* why_not, PanelIo& io) {
  const float w = ImGui::GetFontSize() * 6.5f;
  const bool active = v.state == TrainState::starting || v.state == TrainState::running ||
                      v.state == TrainState::paused || v.state == TrainState::stopping;
  if (!active) {
    ImGui::BeginDisabled(!can_start);
    ImGui::PushStyleColor(ImGuiCol_Button, ImVec4{0.20f, 0.45f, 0.28f, 1.0f});
    if (ImGui::Button("Start training", {w * 1.4f, 0})) io.send(cmd::StartTraining{});
    ImGui::PopStyleColor();
    io.tag("train.start");
    ImGui::EndDisabled();
    if (!can_start) {
      ImGui::SameLine();
      ImGui::TextColored(kDim, "%s", why_not);
    }
    return;
  }
  ImGui::BeginDisabled(v.state == TrainState::stopping || v.state == TrainState::starting);
  if (v.state == TrainState::paused) {
    if (ImGui::Button("Resume", {w, 0})) io.send(cmd::ResumeTraining{});
    io.tag("train.resume");
  } else {
    if (ImGui::Button("Pause", {w, 0})) io.send(cmd::PauseTraining{});
    io.tag("train.pause");
  }
  ImGui::SameLine();
  if (ImGui::Button("Stop", {w, 0})) io.send(cmd::StopTraining{});
  io.tag("train.stop");
  tooltip("Stops after the current step and writes a checkpoint and the adapter.");
  ImGui::SameLine();
  ImGui::BeginDisabled(v.checkpoint_asked);
  if (ImGui::Button("Checkpoint now", {w * 1.4f, 0})) io.send(cmd::CheckpointNow{});
  io.tag("train.checkpoint");
  ImGui::EndDisabled();
  ImGui::EndDisabled();
}

void draw_progress(const TrainView& v) {
  const float frac = v.total ? float(v.step) / float(v.total) : 0.0f;
  std::string overlay = v.total ? "step " + std::to_string(v.step) + " / " + std::to_string(v.total) : "";
  if (v.state == TrainState::starting) overlay = "loading the model and the data...";
  ImGui::ProgressBar(frac, {-FLT_MIN, 0}, overlay.c_str());
  ImGui::TextColored(v.state == TrainState::failed ? kBad : v.state == TrainState::running ? kGood : kDim, "%s",
                     train_state_name(v.state));
  if (v.step == 0) return;
  ImGui::SameLine();
  const double eta = v.step ? v.elapsed_s / v.step * double(v.total - v.step) : 0;
  ImGui::Text(" loss %.4f  lr %.2e  grad %.3f", v.loss, v.lr, v.grad_norm);
  if (v.val_loss) {
    ImGui::SameLine();
    ImGui::Text(" val %.4f", *v.val_loss);
  }
  ImGui::Text("%s tok/s   elapsed %s   ETA %s", format_count(uint64_t(std::llround(v.tokens_per_s))).c_str(),
              format_duration(v.elapsed_s).c_str(),
              v.state == TrainState::running || v.state == TrainState::paused ? format_duration(eta).c_str() : "-");
}

}  // namespace

void draw_train_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const TrainView& v = ctx.train;
  TrainSettings& t = ctx.train_settings;
  const ModelView& model = ctx.model;
  const DataView& data = ctx.data;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  auto& c = t.config;
  const bool can_start = model.loaded && data.loaded && !data.loading && !model.loading;
  draw_controls(v, can_start, !model.loaded ? "open a model" : "open a data file", io);
  draw_progress(v);
  if (!v.error.empty()) ImGui::TextWrapped("%s", v.error.c_str());
  // The run once the store has its entry; a start that failed before (a plan that does not fit, a bad
  // option) made none, and shows only its error.
  if (!v.out_dir.empty() && (v.run_id || v.state == TrainState::starting)) {
    if (v.run_id)
      ImGui::TextColored(kDim, "run %lld: %s", static_cast<long long>(v.run_id), v.out_dir.filename().string().c_str());
    else
      ImGui::TextColored(kDim, "starting: %s", v.out_dir.filename().string().c_str());
    tooltip(v.out_dir.string().c_str());
  }

  const bool active = v.state == TrainState::starting || v.state == TrainState::running ||
                      v.state == TrainState::paused || v.state == TrainState::stopping;
  // The options scroll; the memory line stays under them.
  if (!ImGui::BeginChild("options", {0, -ImGui::GetFrameHeightWithSpacing()}, false)) {
    ImGui::EndChild();
    ImGui::End();
    return;
  }
  ImGui::BeginDisabled(active);
  if (ImGui::CollapsingHeader("Run", ImGuiTreeNodeFlags_DefaultOpen) && begin_options("run")) {
    label("Name", h::kOut);
    ImGui::InputTextWithHint("##name", "run-<date>-<time>", &t.run_name);
    io.tag("train.name");
    u32("Steps", h::kSteps, &c.steps, io, "train.steps");
    u32("Epochs", h::kEpochs, &c.data_options.epochs, io, "train.epochs");
    uint32_t seed = uint32_t(c.seed);
    if (u32("Seed", h::kSeed, &seed, io, "train.seed")) c.seed = seed;
    flag("GPU timing", h::kProfile, &c.profile, io, "train.profile");
    end_options();
  }
  if (ImGui::CollapsingHeader("LoRA", ImGuiTreeNodeFlags_DefaultOpen) && begin_options("lora")) {
    u32("Rank", h::kRank, &c.rank, io, "train.rank");
    f32("Alpha", h::kAlpha, &c.alpha, "%.3g", io, "train.alpha");
    flag("rsLoRA", h::kRslora, &c.rslora, io, "train.rslora");
    f32("Dropout", h::kDropout, &c.dropout, "%.3g", io, "train.dropout");
    label("Base weights", h::kQuantize);
    int quant = int(c.quantize);  // QuantType's order: none, nf4, q8
    if (ImGui::Combo("##quantize", &quant, "as loaded\0nf4 (QLoRA, 4-bit)\0q8 (8-bit)\0")) c.quantize = QuantType(quant);
    io.tag("train.quantize");
    tooltip("Also how the Model panel opens a model for chat: open it again after a change.");
    label("Targets", h::kTargets);
    // The open model's projections only (Phi-3: qkv_proj and gate_up_proj in place of their parts; the ticks
    // were moved there when it was loaded: fit_targets).
    std::optional<model::LayerSpec> layer;
    if (model.loaded) layer = model::layer_spec(model.loaded->model.config, 0);
    // As many on a line as the column holds (Phi-3's gate_up_proj is long).
    size_t shown = 0;
    for (size_t i = 0; i < model::kLoraTargetCount; ++i) {
      if (layer && !layer->has_projection(model::LoraTarget(i))) continue;
      const std::string name(model::kLoraTargetNames[i]);
      if (shown++ > 0) same_line_if_fits(checkbox_width(name.c_str()));
      ImGui::Checkbox(name.c_str(), &t.targets[i]);
      io.tag("train.target." + name);
    }
    end_options();
  }
  if (ImGui::CollapsingHeader("Optimizer", ImGuiTreeNodeFlags_DefaultOpen) && begin_options("optimizer")) {
    f32("Learning rate", h::kLr, &c.schedule.lr, "%.2e", io, "train.lr");
    label("Schedule", h::kSchedule);
    ImGui::Combo("##schedule", &t.schedule, "constant\0linear\0cosine\0");
    io.tag("train.schedule");
    u32("Warmup steps", h::kWarmup, &c.schedule.warmup_steps, io, "train.warmup");
    f32("Weight decay", h::kWeightDecay, &c.optimizer.weight_decay, "%.3g", io, "train.weight_decay");
    f32("Max grad norm", h::kMaxGradNorm, &c.optimizer.max_grad_norm, "%.3g", io, "train.max_grad_norm");
    end_options();
  }
  if (ImGui::CollapsingHeader("Batches and data", ImGuiTreeNodeFlags_DefaultOpen) && begin_options("batches")) {
    u32("Batch size", h::kBatchSize, &c.batch_size, io, "train.batch_size");
    u32("Sequence length", h::kSeqLen, &c.data_options.max_seq_len, io, "train.seq_len");
    u32("Grad accumulation", h::kGradAccum, &c.grad_accum, io, "train.grad_accum");
    flag("Recompute activations", h::kGradCheckpoint, &c.grad_checkpoint, io, "train.grad_checkpoint");
    flag("Train on prompt", h::kTrainOnPrompt, &c.data_options.train_on_prompt, io, "train.train_on_prompt");
    flag("Pack examples", h::kPack, &c.data_options.pack, io, "train.pack");
    flag("Skip bad lines", h::kSkipBadLines, &c.data_options.skip_bad_lines, io, "train.skip_bad_lines");
    end_options();
  }
  if (ImGui::CollapsingHeader("Validation and checkpoints", ImGuiTreeNodeFlags_DefaultOpen) && begin_options("validation")) {
    f32("Validation share", h::kValFraction, &t.val_fraction, "%.2f", io, "train.val_fraction");
    label("Validation file", h::kValData);
    std::string val = c.data_options.validation_file.string();
    if (ImGui::InputTextWithHint("##val_data", "(none)", &val)) c.data_options.validation_file = val;
    io.tag("train.val_data");
    u32("Validate every", h::kValEvery, &c.val_every, io, "train.val_every");
    u32("Checkpoint every", h::kSaveEvery, &c.save_every, io, "train.save_every");
    label("Resume from", h::kResume);
    std::string resume = c.resume.string();
    if (ImGui::InputTextWithHint("##resume", "(a checkpoint-N folder)", &resume)) c.resume = resume;
    io.tag("train.resume_from");
    end_options();
  }
  ImGui::EndDisabled();
  ImGui::EndChild();
  draw_memory_plan(model, data, t, ctx.memory);
  io.tag("train.memory");
  ImGui::End();
}

}  // namespace ls::ui
