// First cut of the chart widget: lines and axes over ImGui's draw list (no interaction yet).
#include "ui/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "error.h"

namespace ls::ui {

namespace {

constexpr ImU32 kPalette[] = {IM_COL32(78, 156, 255, 255), IM_COL32(255, 140, 66, 255), IM_COL32(91, 209, 122, 255),
                              IM_COL32(255, 92, 138, 255), IM_COL32(181, 140, 255, 255), IM_COL32(242, 209, 75, 255)};

ImU32 series_color(const ChartSeries& s, size_t i) {
  return s.color != 0 ? s.color : kPalette[i % std::size(kPalette)];
}

}  // namespace

std::vector<double> ema_smooth(std::span<const double> y, float weight) {
  double w = std::clamp(double(weight), 0.0, 0.999);
  std::vector<double> out(y.size());
  double last = 0, w_pow = 1;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) { out[i] = y[i]; continue; }
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
  if (!(span > 0) || !std::isfinite(span)) return {lo};
  double step = std::pow(10.0, std::floor(std::log10(span / max_ticks)));
  for (int i = 0;; ++i) {
    double s = step * (i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 5) * std::pow(10.0, i / 3);
    double first = std::ceil(lo / s - 1e-9), last = std::floor(hi / s + 1e-9);
    if (last - first + 1 <= max_ticks) {
      std::vector<double> ticks;
      for (double k = first; k <= last; ++k) ticks.push_back(std::clamp(k * s, lo, hi));
      return ticks;
    }
  }
}

std::string chart_csv(std::span<const ChartSeries> series) {
  std::map<double, std::vector<std::string>> rows;
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    for (size_t j = 0; j < std::min(s.x.size(), s.y.size()); ++j) {
      auto& row = rows[s.x[j]];
      row.resize(series.size());
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", s.y[j]);
      row[i] = buf;
    }
  }
  std::string out = "step";
  for (const ChartSeries& s : series) out += "," + s.name;
  out += "\n";
  for (auto& [x, cells] : rows) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    out += buf;
    cells.resize(series.size());
    for (const std::string& c : cells) out += "," + c;
    out += "\n";
  }
  return out;
}

size_t draw_chart(const char* id, std::span<const ChartSeries> series, ChartView& view, ImVec2 size) {
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = std::max(avail.x, 100.0f);
  if (size.y <= 0) size.y = std::max(avail.y, 100.0f);
  ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  ImDrawList* dl = ImGui::GetWindowDrawList();

  if (view.auto_fit) {
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const ChartSeries& s : series)
      for (size_t j = 0; j < std::min(s.x.size(), s.y.size()); ++j) {
        if (!std::isfinite(s.x[j]) || !std::isfinite(s.y[j])) continue;
        x0 = std::min(x0, s.x[j]), x1 = std::max(x1, s.x[j]);
        y0 = std::min(y0, s.y[j]), y1 = std::max(y1, s.y[j]);
      }
    if (x0 <= x1) {
      if (x0 == x1) x0 -= 1, x1 += 1;
      if (y0 == y1) y0 -= 1, y1 += 1;
      view.x_min = x0, view.x_max = x1, view.y_min = y0, view.y_max = y1;
    }
  }
  float left = 50, bottom = 20;
  ImVec2 a{p0.x + left, p0.y + 6}, b{p0.x + size.x - 10, p0.y + size.y - bottom};
  dl->AddRectFilled(a, b, IM_COL32(28, 30, 34, 255));
  auto px = [&](double x, double y) {
    return ImVec2{a.x + float((x - view.x_min) / (view.x_max - view.x_min)) * (b.x - a.x),
                  b.y - float((y - view.y_min) / (view.y_max - view.y_min)) * (b.y - a.y)};
  };
  for (double t : nice_ticks(view.x_min, view.x_max, 6)) {
    ImVec2 p = px(t, view.y_min);
    dl->AddLine({p.x, a.y}, {p.x, b.y}, IM_COL32(255, 255, 255, 28));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", t);
    dl->AddText({p.x - 8, b.y + 2}, IM_COL32(200, 200, 200, 255), buf);
  }
  for (double t : nice_ticks(view.y_min, view.y_max, 5)) {
    ImVec2 p = px(view.x_min, t);
    dl->AddLine({a.x, p.y}, {b.x, p.y}, IM_COL32(255, 255, 255, 28));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", t);
    dl->AddText({p0.x + 2, p.y - 7}, IM_COL32(200, 200, 200, 255), buf);
  }
  size_t drawn = 0;
  dl->PushClipRect(a, b, true);
  std::vector<ImVec2> pts;
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    pts.clear();
    for (size_t j = 0; j < std::min(s.x.size(), s.y.size()); ++j) {
      if (!std::isfinite(s.y[j])) continue;
      pts.push_back(px(s.x[j], s.y[j]));
      if (s.x[j] >= view.x_min && s.x[j] <= view.x_max) ++drawn;
    }
    if (pts.size() > 1) dl->AddPolyline(pts.data(), int(pts.size()), series_color(s, i), ImDrawFlags_None, 1.5f);
  }
  dl->PopClipRect();
  return drawn;
}

void write_chart_png(const std::filesystem::path& file, std::span<const ChartSeries>, const ChartView&, int, int) {
  throw Error(file.string() + ": cannot write the chart (PNG export is not implemented yet)");
}

}  // namespace ls::ui
