#pragma once
// A line chart drawn with ImGui's draw list (no plotting library is packaged in Debian 12): several
// series against a shared x axis (the training step), a legend, hover read-out of every series at the
// nearest x, zoom (mouse wheel, around the cursor) and pan (drag), double-click to fit the data again,
// TensorBoard-style smoothing and a log y scale. Also the chart as CSV and as a PNG drawn on the CPU.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <imgui.h>

namespace ls::ui {

struct ChartSeries {
  std::string name;          // legend entry and CSV column
  std::vector<double> x, y;  // same length, x ascending; a NaN y is a gap
  ImU32 color = 0;           // 0: a palette colour chosen by the series' index
};

// What the caller keeps between frames for one chart.
struct ChartView {
  bool auto_fit = true;      // follow the data; off once the user zooms or pans, on again by double-click
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;  // the visible range (y in data units, also with log_y)
  float smoothing = 0;       // EMA weight in [0, 0.999], applied to every series for drawing
  bool log_y = false;
};

// Draws the chart into `size` (0 in a component: the available width / height). Returns the number of
// data points drawn (all series, after clipping to the visible x range).
size_t draw_chart(const char* id, std::span<const ChartSeries> series, ChartView& view, ImVec2 size = {0, 0});

// TensorBoard's debiased exponential moving average; NaNs pass through and do not disturb it.
std::vector<double> ema_smooth(std::span<const double> y, float weight);
// At most max_ticks round values (1, 2 or 5 times a power of ten apart) within [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);
// The chart drawn on the CPU (axes, ticks with labels, legend, lines) as a PNG of width × height,
// written atomically. Throws ls::Error naming the file when it cannot be written.
void write_chart_png(const std::filesystem::path& file, std::span<const ChartSeries> series, const ChartView& view,
                     int width, int height);

}  // namespace ls::ui
