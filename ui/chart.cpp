// The chart widget of ui/chart.h on ImGui's draw list: input (zoom, pan, fit) and the hover read-out here,
// the picture itself in ui/chart_paint.cpp (shared with the PNG export of ui/chart_png.cpp).
//
// Index
// [SECTION] Smoothing, ticks, CSV
// [SECTION] The ImGui canvas
// [SECTION] Zoom, pan, fit
// [SECTION] Hover read-out
// [SECTION] draw_chart()
#include "ui/chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <imgui_internal.h>  // SetItemUsingMouseWheel()

#include "ui/chart_paint.h"

namespace ls::ui {

// -----------------------------------------------------------------------------------------------
// [SECTION] Smoothing, ticks, CSV
// -----------------------------------------------------------------------------------------------

// TensorBoard (scalars dashboard): last = last·w + (1−w)·y over the finite values, divided by the
// debias factor 1 − w^n (n: finite values so far), so the first values are not pulled toward 0.
std::vector<double> ema_smooth(std::span<const double> y, float weight) {
  double w = std::clamp(double(weight), 0.0, 0.999);
  if (!(w >= 0)) w = 0;  // NaN weight: no smoothing
  std::vector<double> out(y.size());
  double last = 0, w_pow = 1;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    last = last * w + (1 - w) * y[i];
    w_pow *= w;
    out[i] = last / (1 - w_pow);
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (max_ticks < 1 || !std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (lo > hi) std::swap(lo, hi);
  double span = hi - lo;
  if (!std::isfinite(span)) return {};
  double e0 = std::floor(std::log10(span / max_ticks));
  if (!(span > 0) || !std::isfinite(e0)) return {lo};
  // m·10^e for m in 1, 2, 5 and e from below span / max_ticks up: the first step that fits. A tick is
  // k·m·10^e, or k·m / 10^-e for e < 0, so that 0.6 is 6 / 10 and not 3 · 0.2 = 0.6000000000000001.
  for (int i = 0; i < 60; ++i) {
    double m = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 5, e = e0 + i / 3, p = std::pow(10.0, std::abs(e));
    auto tick = [&](double k) { return e >= 0 ? k * m * p : k * m / p; };
    double step = tick(1);
    if (!(step > 0) || !std::isfinite(step)) continue;
    double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
    if (last - first + 1 > max_ticks) continue;
    std::vector<double> ticks;
    for (double k = first; k <= last; ++k) ticks.push_back(std::clamp(tick(k), lo, hi));
    return ticks;
  }
  return {lo};
}

// -----------------------------------------------------------------------------------------------
// [SECTION] The ImGui canvas
// -----------------------------------------------------------------------------------------------

namespace {

class DrawListCanvas final : public ChartCanvas {
 public:
  explicit DrawListCanvas(ImDrawList* dl) : dl_(dl) {}
  float text_width(std::string_view t) override { return ImGui::CalcTextSize(t.data(), t.data() + t.size()).x; }
  float text_height() override { return ImGui::GetTextLineHeight(); }
  void text(ImVec2 p, ImU32 c, std::string_view t) override { dl_->AddText(p, c, t.data(), t.data() + t.size()); }
  void line(ImVec2 a, ImVec2 b, ImU32 c, float th) override { dl_->AddLine(a, b, c, th); }
  void polyline(std::span<const ImVec2> p, ImU32 c, float th) override {
    dl_->AddPolyline(p.data(), int(p.size()), c, ImDrawFlags_None, th);
  }
  void rect_filled(ImVec2 a, ImVec2 b, ImU32 c) override { dl_->AddRectFilled(a, b, c); }
  void dot(ImVec2 center, float r, ImU32 c) override { dl_->AddCircleFilled(center, r, c, 12); }
  void push_clip(ImVec2 a, ImVec2 b) override { dl_->PushClipRect(a, b, true); }
  void pop_clip() override { dl_->PopClipRect(); }

 private:
  ImDrawList* dl_;
};

// -----------------------------------------------------------------------------------------------
// [SECTION] Zoom, pan, fit
// -----------------------------------------------------------------------------------------------

// Scales [lo, hi] by `factor` around the value under pixel `px` (in t: log10 on a log axis).
void zoom_axis(const ChartAxis& axis, float px, double factor, double& lo, double& hi) {
  double t_lo = axis.to_t(lo), t_hi = axis.to_t(hi);
  double c = axis.to_t(axis.from_px(px));
  double new_lo = c - (c - t_lo) * factor, new_hi = c + (t_hi - c) * factor;
  double span = new_hi - new_lo;
  if (!(span > 1e-9 * std::max(1.0, std::abs(c))) || !(span < 1e15)) return;  // zoomed as far as it goes
  lo = axis.from_t(new_lo), hi = axis.from_t(new_hi);
}

// Moves [lo, hi] so the data follows the mouse by `d_px` pixels.
void pan_axis(const ChartAxis& axis, float d_px, double& lo, double& hi) {
  double t_lo = axis.to_t(lo), t_hi = axis.to_t(hi);
  double dt = -double(d_px) * (t_hi - t_lo) / double(axis.px_hi - axis.px_lo);
  lo = axis.from_t(t_lo + dt), hi = axis.from_t(t_hi + dt);
}

// Wheel zooms x around the cursor (y with Shift), left-drag pans, double-click fits the data again.
// Returns whether the view changed.
bool handle_input(const ChartLayout& l, ChartView& view, bool hovered, bool active) {
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    view.auto_fit = true;
    return true;
  }
  bool changed = false;
  // Some platforms turn Shift+wheel into a horizontal wheel; either means "zoom y" with Shift down.
  float wheel = io.KeyShift && io.MouseWheel == 0 ? io.MouseWheelH : io.MouseWheel;
  if (hovered && wheel != 0) {
    double factor = std::pow(0.85, double(wheel));  // wheel up zooms in
    if (io.KeyShift) {
      zoom_axis(l.y, std::clamp(io.MousePos.y, l.plot_min.y, l.plot_max.y), factor, view.y_min, view.y_max);
    } else {
      zoom_axis(l.x, std::clamp(io.MousePos.x, l.plot_min.x, l.plot_max.x), factor, view.x_min, view.x_max);
    }
    view.auto_fit = false;
    changed = true;
  }
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    ImVec2 d = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left);
    ImGui::ResetMouseDragDelta(ImGuiMouseButton_Left);
    if (d.x != 0 || d.y != 0) {
      pan_axis(l.x, d.x, view.x_min, view.x_max);
      pan_axis(l.y, d.y, view.y_min, view.y_max);
      view.auto_fit = false;
      changed = true;
    }
  }
  return changed;
}

// -----------------------------------------------------------------------------------------------
// [SECTION] Hover read-out
// -----------------------------------------------------------------------------------------------

// Index of the point whose x is nearest `target` (x ascending), or n when there is none.
size_t nearest_index(std::span<const double> x, double target) {
  if (x.empty()) return 0;
  size_t i = size_t(std::lower_bound(x.begin(), x.end(), target) - x.begin());
  if (i == x.size()) return i - 1;
  if (i > 0 && std::abs(x[i - 1] - target) <= std::abs(x[i] - target)) return i - 1;
  return i;
}

std::span<const double> xs(const ChartSeries& s) { return std::span(s.x).first(std::min(s.x.size(), s.y.size())); }

// A vertical guide at the data x nearest the mouse, a marker on each series there and a tooltip
// with every series' value (smoothed, and raw beside it, when smoothing is on).
void draw_hover(ChartCanvas& canvas, const ChartLayout& l, std::span<const ChartSeries> series,
                const ChartView& view, ImVec2 mouse) {
  double mx = l.x.from_px(mouse.x), best_x = 0, best_d = std::numeric_limits<double>::infinity();
  for (const ChartSeries& s : series) {
    std::span<const double> x = xs(s);
    if (x.empty()) continue;
    double candidate = x[nearest_index(x, mx)];
    if (std::abs(candidate - mx) < best_d) best_d = std::abs(candidate - mx), best_x = candidate;
  }
  if (!std::isfinite(best_d) || best_x < l.x.lo || best_x > l.x.hi) return;
  float gx = std::floor(l.x.to_px(best_x)) + 0.5f;
  canvas.line({gx, l.plot_min.y}, {gx, l.plot_max.y}, kChartGuide, 1);

  struct Row {
    size_t series;
    double x, value, raw;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < series.size(); ++i) {
    std::span<const double> x = xs(series[i]);
    if (x.empty()) continue;
    size_t j = nearest_index(x, best_x);
    double raw = series[i].y[j], value = raw;
    if (view.smoothing > 0) value = ema_smooth(std::span(series[i].y).first(j + 1), view.smoothing)[j];
    rows.push_back({i, x[j], value, raw});
  }
  canvas.push_clip(l.plot_min, l.plot_max);
  for (const Row& r : rows) {
    if (std::isfinite(r.value) && (!view.log_y || r.value > 0))
      canvas.dot({l.x.to_px(r.x), l.y.to_px(r.value)}, 3.5f, chart_series_color(series[r.series], r.series));
  }
  canvas.pop_clip();

  ImGui::BeginTooltip();
  ImGui::Text("step %s", format_chart_value(best_x).c_str());
  float name_w = 0, th = ImGui::GetTextLineHeight();
  for (const Row& r : rows) name_w = std::max(name_w, ImGui::CalcTextSize(series[r.series].name.c_str()).x);
  for (const Row& r : rows) {
    ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled({p.x, p.y + th / 2 - 2}, {p.x + 10, p.y + th / 2 + 2},
                                              chart_series_color(series[r.series], r.series));
    ImGui::Dummy({14, th});
    ImGui::SameLine();
    ImGui::TextUnformatted(series[r.series].name.c_str());
    ImGui::SameLine(14 + name_w + 2 * ImGui::GetStyle().ItemSpacing.x + 12);
    std::string text = format_chart_value(r.value);
    if (view.smoothing > 0) text += "  (raw " + format_chart_value(r.raw) + ")";
    if (r.x != best_x) text += "  at step " + format_chart_value(r.x);
    ImGui::TextUnformatted(text.c_str());
  }
  ImGui::EndTooltip();
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// [SECTION] draw_chart()
// -----------------------------------------------------------------------------------------------

size_t draw_chart(const char* id, std::span<const ChartSeries> series, ChartView& view, ImVec2 size) {
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  size = {std::max(size.x, 120.0f), std::max(size.y, 80.0f)};
  ImVec2 min = ImGui::GetCursorScreenPos(), max{min.x + size.x, min.y + size.y};
  ImGui::InvisibleButton(id, size);
  bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  if (hovered) ImGui::SetItemUsingMouseWheel();  // the wheel zooms the chart, not the window's scroll

  DrawListCanvas canvas(ImGui::GetWindowDrawList());
  fit_chart_view(series, view);
  ChartLayout layout = layout_chart(canvas, min, max, view);
  if (handle_input(layout, view, hovered, active)) {
    fit_chart_view(series, view);
    layout = layout_chart(canvas, min, max, view);
  }
  size_t drawn = paint_chart(canvas, layout, series, view);
  ImVec2 mouse = ImGui::GetIO().MousePos;
  if (hovered && !ImGui::IsMouseDragging(ImGuiMouseButton_Left) && layout.contains(mouse))
    draw_hover(canvas, layout, series, view, mouse);
  return drawn;
}

}  // namespace ls::ui
