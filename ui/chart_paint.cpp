// The chart painted onto a ChartCanvas (see ui/chart_paint.h).
//
// Index
// [SECTION] Colours and numbers
// [SECTION] Axes and ranges
// [SECTION] Layout
// [SECTION] Decimation
// [SECTION] Painting
#include "ui/chart_paint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ls::ui {

// -----------------------------------------------------------------------------------------------
// [SECTION] Colours and numbers
// -----------------------------------------------------------------------------------------------

namespace {

// Bright, distinct hues that read on a dark background (blue, orange, green, pink, violet, yellow,
// cyan, grey); the order puts the two most common series (train, validation loss) far apart.
constexpr ImU32 kPalette[] = {
    IM_COL32(86, 160, 255, 255),  IM_COL32(255, 146, 72, 255),  IM_COL32(96, 210, 128, 255),
    IM_COL32(255, 102, 150, 255), IM_COL32(180, 140, 255, 255), IM_COL32(240, 210, 80, 255),
    IM_COL32(70, 210, 215, 255),  IM_COL32(190, 190, 190, 255),
};

// "1.50e-04" -> "1.5e-4"; "2.000e+06" -> "2e6"; fixed "0.0250" -> "0.025" when strip_fixed.
std::string tidy_number(std::string s, bool strip_fixed) {
  size_t e = s.find('e');
  std::string mantissa = s.substr(0, e), exponent = e == std::string::npos ? "" : s.substr(e + 1);
  if ((e != std::string::npos || strip_fixed) && mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  if (e == std::string::npos) return mantissa;
  std::string sign = exponent[0] == '-' ? "-" : "";
  size_t digits = exponent.find_first_not_of("+-0");
  return mantissa + "e" + sign + (digits == std::string::npos ? "0" : exponent.substr(digits));
}

std::string printf_number(const char* format, int precision, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, precision, v);
  return buf;
}

bool use_scientific(double magnitude) { return magnitude != 0 && (magnitude < 1e-3 || magnitude >= 1e6); }

}  // namespace

ImU32 chart_series_color(const ChartSeries& s, size_t index) {
  return s.color != 0 ? s.color : kPalette[index % std::size(kPalette)];
}

ImU32 with_alpha(ImU32 color, float alpha) {
  auto a = float((color >> IM_COL32_A_SHIFT) & 0xFF) * std::clamp(alpha, 0.0f, 1.0f);
  return (color & ~IM_COL32_A_MASK) | (ImU32(a + 0.5f) << IM_COL32_A_SHIFT);
}

std::string format_chart_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  double a = std::abs(v);
  if (use_scientific(a)) return tidy_number(printf_number("%.*e", 3, v), true);
  int decimals = std::clamp(3 - int(std::floor(std::log10(a))), 0, 6);
  return tidy_number(printf_number("%.*f", decimals, v), true);
}

std::string format_chart_tick(double v, double step, bool scientific) {
  step = std::abs(step);
  if (!std::isfinite(v)) return format_chart_value(v);
  if (v == 0 || (step > 0 && std::abs(v) < step * 1e-6)) return "0";
  int step_exp = step > 0 && std::isfinite(step) ? int(std::floor(std::log10(step) + 1e-9)) : 0;
  if (scientific) {
    int exp = int(std::floor(std::log10(std::abs(v)) + 1e-9));
    return tidy_number(printf_number("%.*e", std::clamp(exp - step_exp, 0, 8), v), false);
  }
  return printf_number("%.*f", std::clamp(-step_exp, 0, 10), v);
}

// -----------------------------------------------------------------------------------------------
// [SECTION] Axes and ranges
// -----------------------------------------------------------------------------------------------

double ChartAxis::to_t(double v) const { return log ? std::log10(v) : v; }
double ChartAxis::from_t(double t) const { return log ? std::pow(10.0, t) : t; }

float ChartAxis::to_px(double v) const {
  double t_lo = to_t(lo), t_hi = to_t(hi);
  return px_lo + float((to_t(v) - t_lo) / (t_hi - t_lo) * double(px_hi - px_lo));
}

double ChartAxis::from_px(float px) const {
  double t_lo = to_t(lo), t_hi = to_t(hi);
  return from_t(t_lo + double(px - px_lo) / double(px_hi - px_lo) * (t_hi - t_lo));
}

namespace {

// Makes [lo, hi] finite and of some width: around a single value, `half` either side.
void widen(double& lo, double& hi, double half) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  double c = lo / 2 + hi / 2;
  if (!(hi - lo > 1e-12 * std::max(std::abs(lo), std::abs(hi))) || !std::isfinite(hi - lo)) {
    lo = c - half, hi = c + half;
  }
}

bool drawable(double y, bool log_y) { return std::isfinite(y) && (!log_y || y > 0); }

}  // namespace

void fit_chart_view(std::span<const ChartSeries> series, ChartView& view) {
  if (view.auto_fit) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    double x0 = kInf, x1 = -kInf, y0 = kInf, y1 = -kInf;
    for (const ChartSeries& s : series) {
      size_t n = std::min(s.x.size(), s.y.size());
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !drawable(s.y[i], view.log_y)) continue;
        x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
        y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
      }
    }
    if (x0 <= x1) {
      view.x_min = x0, view.x_max = x1;
      if (view.log_y) {
        double t0 = std::log10(y0), t1 = std::log10(y1), pad = std::max((t1 - t0) * 0.05, 0.0);
        view.y_min = std::pow(10.0, t0 - pad), view.y_max = std::pow(10.0, t1 + pad);
      } else {
        double pad = (y1 - y0) * 0.05;
        view.y_min = y0 - pad, view.y_max = y1 + pad;
      }
    }
  }
  widen(view.x_min, view.x_max, std::max(1.0, std::abs(view.x_min) * 1e-6));
  if (view.log_y) {
    if (!(view.y_max > 0) || !std::isfinite(view.y_max)) view.y_max = 1;
    if (!(view.y_min > 0) || !std::isfinite(view.y_min) || view.y_min >= view.y_max) view.y_min = view.y_max / 1000;
    double t0 = std::log10(view.y_min), t1 = std::log10(view.y_max);
    widen(t0, t1, 0.25);
    view.y_min = std::pow(10.0, t0), view.y_max = std::pow(10.0, t1);
  } else {
    double c = std::abs(view.y_min / 2 + view.y_max / 2);
    widen(view.y_min, view.y_max, c > 0 && std::isfinite(c) ? c * 0.1 : 1.0);
  }
}

namespace {

std::vector<ChartTick> linear_ticks(const ChartAxis& axis, int max_ticks, bool integers) {
  std::vector<double> values = nice_ticks(axis.lo, axis.hi, max_ticks);
  double step = values.size() > 1 ? values[1] - values[0] : std::abs(axis.hi - axis.lo);
  if (integers && step < 1) {  // the training step: no ticks between steps, unless zoomed inside one
    std::vector<double> whole;
    for (double v = std::ceil(axis.lo); v <= std::floor(axis.hi) && whole.size() <= size_t(max_ticks); ++v)
      whole.push_back(v);
    if (!whole.empty() && whole.size() <= size_t(max_ticks)) values = whole, step = 1;
  }
  bool sci = use_scientific(std::max(std::abs(axis.lo), std::abs(axis.hi)));
  std::vector<ChartTick> ticks;
  for (double v : values) ticks.push_back({v, axis.to_px(v), format_chart_tick(v, step, sci)});
  return ticks;
}

// Decades (or 1-2-5 within them when that fits); linear ticks when the range is under a decade.
std::vector<ChartTick> log_ticks(const ChartAxis& axis, int max_ticks) {
  double t0 = std::log10(axis.lo), t1 = std::log10(axis.hi);
  std::vector<double> values;
  for (double k = std::floor(t0); k <= std::ceil(t1) && values.size() <= size_t(max_ticks); ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * std::pow(10.0, k);
      if (v >= axis.lo * (1 - 1e-9) && v <= axis.hi * (1 + 1e-9)) values.push_back(v);
    }
  if (values.size() > size_t(max_ticks)) {
    values.clear();
    for (double k : nice_ticks(t0, t1, max_ticks))
      if (k == std::round(k)) values.push_back(std::pow(10.0, k));
  }
  if (values.size() < 2) return linear_ticks(axis, max_ticks, false);
  std::vector<ChartTick> ticks;
  for (double v : values) ticks.push_back({v, axis.to_px(v), format_chart_value(v)});
  return ticks;
}

float widest(ChartCanvas& canvas, const std::vector<ChartTick>& ticks) {
  float w = 0;
  for (const ChartTick& t : ticks) w = std::max(w, canvas.text_width(t.label));
  return w;
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// [SECTION] Layout
// -----------------------------------------------------------------------------------------------

ChartLayout layout_chart(ChartCanvas& canvas, ImVec2 min, ImVec2 max, const ChartView& view) {
  constexpr float kPad = 8, kTickGap = 5;
  float th = canvas.text_height();
  ChartLayout l{.min = min, .max = max};
  l.plot_min.y = min.y + kPad;
  l.plot_max.y = std::max(l.plot_min.y + 1, max.y - kPad / 2 - th - kTickGap);
  l.y = ChartAxis{.lo = view.y_min, .hi = view.y_max, .px_lo = l.plot_max.y, .px_hi = l.plot_min.y, .log = view.log_y};
  int y_max_ticks = std::clamp(int((l.plot_max.y - l.plot_min.y) / (th * 2.2f)), 2, 10);
  l.y_ticks = view.log_y ? log_ticks(l.y, y_max_ticks) : linear_ticks(l.y, y_max_ticks, false);

  l.plot_min.x = std::min(min.x + kPad + widest(canvas, l.y_ticks) + kTickGap, max.x - kPad - 1);
  l.plot_max.x = std::max(l.plot_min.x + 1, max.x - kPad - 4);
  l.x = ChartAxis{.lo = view.x_min, .hi = view.x_max, .px_lo = l.plot_min.x, .px_hi = l.plot_max.x};
  // Fewer x ticks until their labels fit with some air between them.
  float width = l.plot_max.x - l.plot_min.x;
  for (int n = std::clamp(int(width / 70), 2, 12); n >= 2; --n) {
    l.x_ticks = linear_ticks(l.x, n, true);
    if (float(l.x_ticks.size()) * (widest(canvas, l.x_ticks) + 2 * th) <= width) break;
  }
  return l;
}

// -----------------------------------------------------------------------------------------------
// [SECTION] Decimation
// -----------------------------------------------------------------------------------------------

namespace {
constexpr float kFar = 1e6f;
}  // namespace

void build_polylines(std::span<const double> x, std::span<const double> y, const ChartAxis& ax,
                     const ChartAxis& ay, ChartPolylines& out) {
  out.points.clear();
  out.run_ends.clear();
  out.visible = 0;
  size_t n = std::min(x.size(), y.size());
  // The visible slice of the (ascending) x, with one point beyond each edge so lines reach the border.
  size_t begin = size_t(std::lower_bound(x.begin(), x.begin() + ptrdiff_t(n), ax.lo) - x.begin());
  size_t end = size_t(std::upper_bound(x.begin(), x.begin() + ptrdiff_t(n), ax.hi) - x.begin());
  if (begin > 0) --begin;
  if (end < n) ++end;
  auto end_run = [&] {
    size_t start = out.run_ends.empty() ? 0 : out.run_ends.back();
    if (out.points.size() > start) out.run_ends.push_back(out.points.size());
  };
  // Far off-screen points are pulled in to where float pixels are still exact (lines may bend there).
  auto point = [&](size_t i) {
    return ImVec2{std::clamp(ax.to_px(x[i]), -kFar, kFar), std::clamp(ay.to_px(y[i]), -kFar, kFar)};
  };

  double width_px = std::abs(double(ax.px_hi) - double(ax.px_lo));
  bool decimate = double(end - begin) > 2 * width_px + 4;
  double t_lo = ax.to_t(ax.lo), px_per_t = double(ax.px_hi - ax.px_lo) / (ax.to_t(ax.hi) - t_lo);
  // Column state (decimated path): indices of the first, lowest, highest and last point.
  long column = std::numeric_limits<long>::min();
  size_t first = 0, low = 0, high = 0, last = 0;
  bool open = false;
  auto flush = [&] {
    if (!open) return;
    size_t order[4] = {first, low, high, last};
    std::sort(order + 1, order + 3);
    for (size_t k = 0; k < 4; ++k)
      if (k == 0 || order[k] != order[k - 1]) out.points.push_back(point(order[k]));
    open = false;
  };
  for (size_t i = begin; i < end; ++i) {
    if (!std::isfinite(x[i])) continue;
    if (!std::isfinite(y[i])) {  // a gap
      flush();
      end_run();
      continue;
    }
    if (ay.log && y[i] <= 0) continue;  // not drawable on a log scale: skipped, the line joins its neighbours
    if (x[i] >= ax.lo && x[i] <= ax.hi) ++out.visible;
    if (!decimate) {
      out.points.push_back(point(i));
      continue;
    }
    auto c = long(std::clamp(std::floor((x[i] - t_lo) * px_per_t), -1e15, 1e15));
    if (c != column || !open) {
      flush();
      column = c, first = low = high = last = i, open = true;
      continue;
    }
    last = i;
    if (y[i] < y[low]) low = i;
    if (y[i] > y[high]) high = i;
  }
  flush();
  end_run();
}

// -----------------------------------------------------------------------------------------------
// [SECTION] Painting
// -----------------------------------------------------------------------------------------------

namespace {

void paint_polylines(ChartCanvas& canvas, const ChartPolylines& p, ImU32 color, float thickness) {
  size_t start = 0;
  for (size_t end : p.run_ends) {
    if (end - start == 1) {
      canvas.dot(p.points[start], thickness + 1.0f, color);
    } else {
      canvas.polyline(std::span(p.points).subspan(start, end - start), color, thickness);
    }
    start = end;
  }
}

void paint_axes(ChartCanvas& canvas, const ChartLayout& l) {
  float th = canvas.text_height();
  canvas.rect_filled(l.min, l.max, kChartBackground);
  canvas.rect_filled(l.plot_min, l.plot_max, kChartPlotBackground);
  for (const ChartTick& t : l.y_ticks) {
    float y = std::floor(t.px) + 0.5f;
    canvas.line({l.plot_min.x, y}, {l.plot_max.x, y}, kChartGrid, 1);
    float w = canvas.text_width(t.label);
    float top = std::clamp(y - th / 2, l.min.y, l.max.y - th);
    canvas.text({l.plot_min.x - 5 - w, top}, kChartText, t.label);
  }
  for (const ChartTick& t : l.x_ticks) {
    float x = std::floor(t.px) + 0.5f;
    canvas.line({x, l.plot_min.y}, {x, l.plot_max.y}, kChartGrid, 1);
    float w = canvas.text_width(t.label);
    float left = std::clamp(x - w / 2, l.min.x, l.max.x - w);
    canvas.text({left, l.plot_max.y + 5}, kChartText, t.label);
  }
  ImVec2 a{std::floor(l.plot_min.x) + 0.5f, std::floor(l.plot_min.y) + 0.5f};
  ImVec2 b{std::floor(l.plot_max.x) - 0.5f, std::floor(l.plot_max.y) - 0.5f};
  canvas.line(a, {b.x, a.y}, kChartBorder, 1);
  canvas.line({b.x, a.y}, b, kChartBorder, 1);
  canvas.line(b, {a.x, b.y}, kChartBorder, 1);
  canvas.line({a.x, b.y}, a, kChartBorder, 1);
}

// Top right inside the plot: a swatch and the name of each named series.
void paint_legend(ChartCanvas& canvas, const ChartLayout& l, std::span<const ChartSeries> series) {
  float th = canvas.text_height(), name_w = 0;
  size_t rows = 0;
  for (const ChartSeries& s : series) {
    if (s.name.empty()) continue;
    name_w = std::max(name_w, canvas.text_width(s.name));
    ++rows;
  }
  if (rows == 0) return;
  constexpr float kPad = 6, kSwatch = 14;
  float row_h = th + 2;
  ImVec2 max{l.plot_max.x - kPad, l.plot_min.y + kPad + 2 * kPad + float(rows) * row_h};
  ImVec2 min{max.x - (2 * kPad + kSwatch + 6 + name_w), l.plot_min.y + kPad};
  if (min.x < l.plot_min.x + kPad || max.y > l.plot_max.y) return;  // no room: the tooltip still names them
  canvas.rect_filled(min, max, kChartLegendBackground);
  float y = min.y + kPad;
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].name.empty()) continue;
    ImU32 color = chart_series_color(series[i], i);
    float mid = std::floor(y + th / 2) + 0.5f;
    canvas.rect_filled({min.x + kPad, mid - 1.5f}, {min.x + kPad + kSwatch, mid + 1.5f}, color);
    canvas.text({min.x + kPad + kSwatch + 6, y}, kChartText, series[i].name);
    y += row_h;
  }
}

}  // namespace

size_t paint_chart(ChartCanvas& canvas, const ChartLayout& l, std::span<const ChartSeries> series,
                   const ChartView& view) {
  paint_axes(canvas, l);
  canvas.push_clip(l.plot_min, l.plot_max);
  ChartPolylines lines;
  bool smoothed = view.smoothing > 0;
  if (smoothed) {
    for (size_t i = 0; i < series.size(); ++i) {
      build_polylines(series[i].x, series[i].y, l.x, l.y, lines);
      paint_polylines(canvas, lines, with_alpha(chart_series_color(series[i], i), kChartRawAlpha), 1.0f);
    }
  }
  size_t drawn = 0;
  std::vector<double> values;
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    if (smoothed) values = ema_smooth(s.y, view.smoothing);
    build_polylines(s.x, smoothed ? std::span<const double>(values) : std::span<const double>(s.y), l.x, l.y, lines);
    paint_polylines(canvas, lines, chart_series_color(s, i), 1.6f);
    drawn += lines.visible;
  }
  canvas.pop_clip();
  paint_legend(canvas, l, series);
  if (drawn == 0) {
    bool any = false;
    for (const ChartSeries& s : series)
      for (double v : s.y) any = any || drawable(v, view.log_y);
    std::string_view message = any ? "no data in view (double-click to fit)" : "no data";
    float w = canvas.text_width(message);
    canvas.text({(l.plot_min.x + l.plot_max.x - w) / 2, (l.plot_min.y + l.plot_max.y - canvas.text_height()) / 2},
                kChartText, message);
  }
  return drawn;
}

}  // namespace ls::ui
