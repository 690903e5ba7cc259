// [SECTION] Charts panel: training and validation loss (and another run's loss beside it), learning
// rate, gradient norm and tokens/s against the step, from the run store (live for running runs).
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

const std::vector<store::MetricRow>* rows_of(const RunsView& runs, int64_t run) {
  auto it = runs.metrics.find(run);
  return it == runs.metrics.end() ? nullptr : &it->second;
}

ChartSeries metric_series(const std::vector<store::MetricRow>& rows, const char* name, double store::MetricRow::*field) {
  ChartSeries s{.name = name};
  for (const auto& r : rows) {
    s.x.push_back(double(r.step));
    s.y.push_back(r.*field);
  }
  return s;
}

std::string run_label(const RunsView& runs, int64_t id) {
  const store::RunInfo* r = runs.find(id);
  return r ? r->name : "run " + std::to_string(id);
}

// A small chart with a title above it.
void small_chart(const char* title, const char* id, const std::vector<ChartSeries>& series, ChartView& view, ImVec2 size) {
  ImGui::BeginGroup();
  ImGui::TextColored(kDim, "%s", title);
  draw_chart(id, series, view, {size.x, size.y - ImGui::GetTextLineHeightWithSpacing()});
  ImGui::EndGroup();
}

}  // namespace

std::vector<ChartSeries> loss_series(const RunsView& runs, int64_t run, const char* suffix) {
  std::vector<ChartSeries> out;
  const auto* rows = rows_of(runs, run);
  if (!rows) return out;
  out.push_back(metric_series(*rows, "loss", &store::MetricRow::loss));
  out.back().name += suffix;
  ChartSeries val{.name = std::string("val loss") + suffix};
  for (const auto& r : *rows)
    if (r.val_loss) val.x.push_back(double(r.step)), val.y.push_back(*r.val_loss);
  if (!val.x.empty()) out.push_back(std::move(val));
  return out;
}

void draw_charts_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const RunsView& runs = ctx.runs;
  ChartsPanelState& s = ctx.state.charts;
  PanelIo& io = ctx.io;
  s.loss_points = 0;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  if (!runs.shown) {
    ImGui::TextColored(kDim, "No run yet: start training, or pick a run in Runs.");
    ImGui::End();
    return;
  }
  const int64_t shown = *runs.shown;
  // Controls: run, overlay, smoothing, log scale, export.
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12.5f);
  if (ImGui::BeginCombo("##run", run_label(runs, shown).c_str())) {
    for (const auto& r : runs.runs)
      if (ImGui::Selectable(run_label(runs, r.id).c_str(), r.id == shown)) io.send(cmd::ShowRun{r.id});
    ImGui::EndCombo();
  }
  io.tag("charts.run");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  const std::string overlay = runs.overlay ? "vs " + run_label(runs, *runs.overlay) : "compare...";
  if (ImGui::BeginCombo("##overlay", overlay.c_str())) {
    if (ImGui::Selectable("(none)", !runs.overlay)) io.send(cmd::OverlayRun{std::nullopt});
    for (const auto& r : runs.runs)
      if (r.id != shown && ImGui::Selectable(run_label(runs, r.id).c_str(), runs.overlay == r.id))
        io.send(cmd::OverlayRun{r.id});
    ImGui::EndCombo();
  }
  tooltip("Draw another run's loss beside this one.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  ImGui::SliderFloat("##smooth", &s.smoothing, 0.0f, 0.99f, "smooth %.2f");
  tooltip("Exponential moving average of the curves (TensorBoard's).");
  ImGui::SameLine();
  ImGui::Checkbox("log", &s.log_y);
  tooltip("Logarithmic loss axis.");
  ImGui::SameLine();
  if (ImGui::Button("PNG")) io.send(cmd::ExportChart{true});
  tooltip("Save the loss chart as a PNG in the run's folder.");
  ImGui::SameLine();
  if (ImGui::Button("CSV")) io.send(cmd::ExportChart{false});
  tooltip("Save the charted metrics as CSV in the run's folder.");

  const auto* rows = rows_of(runs, shown);
  if (!rows || rows->empty()) {
    ImGui::TextColored(kDim, "No steps logged yet.");
    ImGui::End();
    return;
  }
  auto loss = loss_series(runs, shown);
  if (runs.overlay) {
    auto other = loss_series(runs, *runs.overlay, (" (run " + std::to_string(*runs.overlay) + ")").c_str());
    for (auto& o : other) o.color = IM_COL32(200, 200, 200, 200), loss.push_back(std::move(o));
    if (loss.size() > 2) loss.back().color = IM_COL32(150, 150, 150, 170);
  }
  s.loss.smoothing = s.grad_norm.smoothing = s.tokens.smoothing = s.smoothing;
  s.loss.log_y = s.log_y;
  ImGui::TextColored(kDim, "loss%s", runs.overlay ? " (grey: the compared run)" : "");
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float small_h = std::max(avail.y * 0.36f, ImGui::GetFontSize() * 7);
  s.loss_points = draw_chart("loss", loss, s.loss, {avail.x, avail.y - small_h - ImGui::GetStyle().ItemSpacing.y});
  io.tag("charts.loss");
  const float w = (avail.x - 2 * ImGui::GetStyle().ItemSpacing.x) / 3;
  small_chart("learning rate", "lr", {metric_series(*rows, "lr", &store::MetricRow::lr)}, s.lr, {w, small_h});
  ImGui::SameLine();
  small_chart("gradient norm", "grad", {metric_series(*rows, "grad norm", &store::MetricRow::grad_norm)}, s.grad_norm,
              {w, small_h});
  ImGui::SameLine();
  small_chart("tokens / s", "tps", {metric_series(*rows, "tok/s", &store::MetricRow::tokens_per_s)}, s.tokens, {w, small_h});
  ImGui::End();
}

}  // namespace ls::ui
