#pragma once
// The chart as drawn, apart from where it is drawn: ranges fitted to the data, axes with nice tick
// labels, series decimated to about one point per pixel column, raw lines faint behind smoothed ones,
// and a legend, all painted onto a ChartCanvas: ImGui's draw list on screen (ui/chart.cpp) or a CPU
// raster for PNG export (ui/chart_png.cpp). Both therefore show the same picture; the widget adds
// zoom, pan and the hover read-out on top. Coordinates are pixels, y down, pixel centres at +0.5.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ui/chart.h"

namespace ls::ui {

// A dark theme, the same on screen and in PNG (the chart is legible on any ImGui dark style).
inline constexpr ImU32 kChartBackground = IM_COL32(22, 24, 28, 255);
inline constexpr ImU32 kChartPlotBackground = IM_COL32(30, 33, 39, 255);
inline constexpr ImU32 kChartGrid = IM_COL32(255, 255, 255, 22);
inline constexpr ImU32 kChartBorder = IM_COL32(255, 255, 255, 60);
inline constexpr ImU32 kChartText = IM_COL32(196, 200, 208, 255);
inline constexpr ImU32 kChartGuide = IM_COL32(255, 255, 255, 110);
inline constexpr ImU32 kChartLegendBackground = IM_COL32(18, 20, 24, 215);
inline constexpr float kChartRawAlpha = 0.28f;  // raw series behind a smoothed one

// The series' own colour, else the palette's entry for its index.
ImU32 chart_series_color(const ChartSeries& s, size_t index);
ImU32 with_alpha(ImU32 color, float alpha);

// Where the chart is drawn. Text is one line, `top_left` its box's corner.
class ChartCanvas {
 public:
  virtual ~ChartCanvas() = default;
  virtual float text_width(std::string_view text) = 0;
  virtual float text_height() = 0;
  virtual void text(ImVec2 top_left, ImU32 color, std::string_view text) = 0;
  virtual void line(ImVec2 a, ImVec2 b, ImU32 color, float thickness) = 0;
  virtual void polyline(std::span<const ImVec2> points, ImU32 color, float thickness) = 0;
  virtual void rect_filled(ImVec2 min, ImVec2 max, ImU32 color) = 0;
  virtual void dot(ImVec2 center, float radius, ImU32 color) = 0;
  virtual void push_clip(ImVec2 min, ImVec2 max) = 0;
  virtual void pop_clip() = 0;
};

// One axis: data value <-> pixel, linear or log10. The mapping is linear in t = to_t(value).
struct ChartAxis {
  double lo = 0, hi = 1;       // visible range in data units (both > 0 when log)
  float px_lo = 0, px_hi = 1;  // pixels of lo and hi (for y, px_lo is the bottom edge)
  bool log = false;
  double to_t(double v) const;
  double from_t(double t) const;
  float to_px(double v) const;
  double from_px(float px) const;
};

struct ChartTick {
  double value = 0;
  float px = 0;
  std::string label;
};

struct ChartLayout {
  ImVec2 min, max;            // the whole canvas
  ImVec2 plot_min, plot_max;  // the plot area, inside the axes
  ChartAxis x, y;
  std::vector<ChartTick> x_ticks, y_ticks;
  bool contains(ImVec2 p) const {
    return p.x >= plot_min.x && p.x <= plot_max.x && p.y >= plot_min.y && p.y <= plot_max.y;
  }
};

// With view.auto_fit, sets the range to the data (y padded by 5%, zero-height and zero-width ranges
// given some); then makes any range drawable: finite, non-empty, y positive under log_y.
void fit_chart_view(std::span<const ChartSeries> series, ChartView& view);
// Places the plot area inside [min, max] with room for the tick labels of the view's range.
ChartLayout layout_chart(ChartCanvas& canvas, ImVec2 min, ImVec2 max, const ChartView& view);
// Background, grid, tick labels, the series (raw faint behind smoothed when view.smoothing > 0) and
// the legend. Returns the data points within the visible x range (finite, positive under log_y).
size_t paint_chart(ChartCanvas& canvas, const ChartLayout& layout, std::span<const ChartSeries> series,
                   const ChartView& view);

// Pixel polylines of one series: runs split at NaN/inf gaps; a run of one point is drawn as a dot.
// Above two points per pixel column, each column keeps its first, min, max and last point in order.
struct ChartPolylines {
  std::vector<ImVec2> points;
  std::vector<size_t> run_ends;  // points[run_ends[i-1] .. run_ends[i]) is run i
  size_t visible = 0;            // data points within the x range, counted before decimation
};
void build_polylines(std::span<const double> x, std::span<const double> y, const ChartAxis& ax,
                     const ChartAxis& ay, ChartPolylines& out);

// Numbers as the chart prints them: 4 significant digits, "3e-4" style below 1e-3 and from 1e6 on.
std::string format_chart_value(double v);
// A tick label given the spacing of the ticks (all labels of an axis get the same precision).
std::string format_chart_tick(double v, double step, bool scientific);

}  // namespace ls::ui
