#include "ui/train_memory.h"

#include <imgui.h>

#include "model/layer_spec.h"
#include "train/batcher.h"
#include "train/plan_fit.h"
#include "ui/widgets.h"

namespace ls::ui {

std::optional<train::PlanOptions> panel_plan_options(const ModelView& model, const DataView& data,
                                                     const TrainSettings& t, const MemoryView& memory) {
  if (!model.loaded) return std::nullopt;
  const train::TrainConfig& c = t.config;
  std::vector<model::LoraTarget> targets;
  const model::LayerSpec layer = model::layer_spec(model.loaded->model.config, 0);
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)  // those the model has (Phi-3: the fused ones)
    if (t.targets[i] && layer.has_projection(model::LoraTarget(i))) targets.push_back(model::LoraTarget(i));
  if (targets.empty() || c.rank == 0 || c.batch_size == 0 || c.data_options.max_seq_len < 2) return std::nullopt;
  const uint32_t max_len = c.data_options.max_seq_len;
  const bool from_data = data.loaded && !c.data_options.pack;
  const std::shared_ptr<const LoadedModel> loaded = model.loaded;
  return train::PlanOptions{
      .model = loaded->model.config,
      // The dtype the weights are kept in here: bf16 may be f16 on tensor cores, the same size.
      .weight_dtype = [loaded](const model::ExpectedTensor& e) { return model::weight_of(loaded->model.weights, e).dtype(); },
      .device = memory.plan_device,
      .shape = {.batch = c.batch_size,
                .seq_len = from_data ? train::seq_len_for(data.longest, max_len) : max_len,
                .loss_rows = 0,
                .validation = !c.data_options.validation_file.empty() || t.val_fraction > 0,
                .validation_loss_rows = 0},
      .targets = std::move(targets),
      .rank = c.rank,
      .dropout = c.dropout,
      .grad_checkpoint = c.grad_checkpoint,
      .quantize = c.quantize};
}

namespace {

// The plan's parts and total as a table, the device's memory, and what to change when it does not fit.
void draw_plan_tooltip(const train::PlanOptions& options, const train::MemoryPlan& plan, const vk::MemoryBudget& budget) {
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32);
  ImGui::TextUnformatted("Memory plan of this run");
  ImGui::TextColored(kDim, "batches of %u x %u tokens at most; the run plans its own from the data", options.shape.batch,
                     options.shape.seq_len);
  if (ImGui::BeginTable("plan", 2, ImGuiTableFlags_SizingFixedFit)) {
    auto row = [](const char* name, uint64_t bytes) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(train::format_bytes(bytes).c_str());
    };
    for (size_t i = 0; i < train::kPlanParts; ++i)
      if (const uint64_t bytes = plan.bytes(train::PlanPart(i))) row(train::plan_part_name(train::PlanPart(i)), bytes);
    row("total", plan.total());
    ImGui::EndTable();
  }
  if (plan.host_bytes)
    ImGui::TextColored(kDim, "in system memory, not the GPU's: %s, %s", plan.host_what.c_str(),
                       train::format_bytes(plan.host_bytes).c_str());
  ImGui::TextColored(kDim, "the device: %s available of %s (%s)", train::format_bytes(budget.available()).c_str(),
                     train::format_bytes(budget.heap_bytes).c_str(), budget.source.c_str());
  if (plan.total() > budget.available()) {
    ImGui::Separator();
    ImGui::TextUnformatted("To fit:");
    for (const train::PlanChange& c : train::ways_to_fit(options, budget.available()))
      ImGui::BulletText("%s saves %s%s", c.flags.c_str(), train::format_bytes(c.saves).c_str(), c.fits ? " (fits)" : "");
  }
  ImGui::PopTextWrapPos();
  ImGui::EndTooltip();
}

}  // namespace

void draw_memory_plan(const ModelView& model, const DataView& data, const TrainSettings& settings,
                      const MemoryView& memory) {
  const std::optional<train::PlanOptions> options = panel_plan_options(model, data, settings, memory);
  if (!options) {
    ImGui::TextColored(kDim, "GPU memory: open a model and choose a target to see what the run needs");
    return;
  }
  const train::MemoryPlan plan = train::memory_plan(*options);
  if (memory.budget.heap_bytes == 0) {  // not read yet (a worker reads it twice a second)
    ImGui::TextColored(kDim, "GPU memory: %s planned", train::format_bytes(plan.total()).c_str());
    return;
  }
  const bool fits = plan.total() <= memory.budget.available();
  ImGui::TextColored(fits ? kDim : kBad, "%s%s", train::plan_summary(plan, memory.budget).c_str(),
                     fits ? "" : ": does not fit");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) draw_plan_tooltip(*options, plan, memory.budget);
}

}  // namespace ls::ui
