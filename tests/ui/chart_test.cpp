// The chart widget on the CPU only (no window, no Vulkan): smoothing and ticks against hand-computed
// values; the PNG export decoded back; draw_chart in a headless ImGui context (a font atlas, no
// backend) fed with mouse input the way the GLFW backend feeds it (ImGui 1.86: io.MousePos,
// io.MouseDown, io.MouseWheel, io.KeyShift).
#include "ui/chart.h"

#include <stb_image.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "support/testing.h"
#include "ui/chart_paint.h"

namespace ls::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// -----------------------------------------------------------------------------------------------
// ema_smooth, nice_ticks

TEST(ChartMath, EmaSmoothIsTensorBoardsDebiasedAverage) {
  // w = 0.5: last = 0.5, 1.25, 2.125; debias 1 - 0.5^n = 0.5, 0.75, 0.875.
  std::vector<double> y{1, 2, 3};
  std::vector<double> s = ema_smooth(y, 0.5f);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.25 / 0.75);
  EXPECT_DOUBLE_EQ(s[2], 2.125 / 0.875);
}

TEST(ChartMath, EmaSmoothPassesNaNThroughWithoutDisturbingIt) {
  std::vector<double> y{1, kNaN, 3, kInf};
  std::vector<double> s = ema_smooth(y, 0.5f);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_DOUBLE_EQ(s[2], (0.25 + 1.5) / 0.75);  // as if the NaN were not there
  EXPECT_EQ(s[3], kInf);
}

TEST(ChartMath, EmaSmoothWeightZeroIsIdentityAndConstantsStay) {
  std::vector<double> y{3.5, -1, 1e-7, 42, 0};
  EXPECT_EQ(ema_smooth(y, 0.0f), y);
  std::vector<double> flat(50, 2.5);
  for (double v : ema_smooth(flat, 0.99f)) EXPECT_NEAR(v, 2.5, 1e-12);
  for (double v : ema_smooth(flat, 1.0f)) EXPECT_NEAR(v, 2.5, 1e-12);  // clamped to 0.999: still finite
  EXPECT_TRUE(ema_smooth({}, 0.6f).empty());
}

void expect_nice(double lo, double hi, int max_ticks) {
  SCOPED_TRACE(testing::Message() << "[" << lo << ", " << hi << "] max " << max_ticks);
  std::vector<double> t = nice_ticks(lo, hi, max_ticks);
  ASSERT_GE(t.size(), 1u);
  EXPECT_LE(t.size(), size_t(max_ticks));
  for (double v : t) {
    EXPECT_GE(v, std::min(lo, hi));
    EXPECT_LE(v, std::max(lo, hi));
  }
  if (t.size() < 2) return;
  double step = t[1] - t[0];
  double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
      << "step " << step;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_NEAR(t[i] / step, std::round(t[i] / step), 1e-6) << "tick " << t[i] << " not a multiple of " << step;
    if (i > 0) {
      EXPECT_NEAR(t[i] - t[i - 1], step, step * 1e-6);
    }
  }
}

TEST(ChartMath, NiceTicksAreRoundStepsInsideTheRange) {
  EXPECT_EQ(nice_ticks(0, 1, 6), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(nice_ticks(3, 97, 10), (std::vector<double>{10, 20, 30, 40, 50, 60, 70, 80, 90}));
  EXPECT_EQ(nice_ticks(-3, 3, 7), (std::vector<double>{-3, -2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(nice_ticks(1, 0, 5), nice_ticks(0, 1, 5));  // reversed bounds
  expect_nice(0, 1, 6);
  expect_nice(1e-4, 5e-4, 5);
  expect_nice(0.3, 0.4, 1);
  expect_nice(0, 1e9, 4);
  expect_nice(2.31, 2.38, 8);
  expect_nice(-1e-6, 7e-6, 10);
  expect_nice(1, 100000, 12);
  expect_nice(1e300, 1.5e300, 5);
}

TEST(ChartMath, NiceTicksOfDegenerateRanges) {
  EXPECT_EQ(nice_ticks(2, 2, 5), std::vector<double>{2});
  EXPECT_TRUE(nice_ticks(0, 1, 0).empty());
  EXPECT_TRUE(nice_ticks(kNaN, 1, 5).empty());
  EXPECT_TRUE(nice_ticks(0, kInf, 5).empty());
  EXPECT_TRUE(nice_ticks(-1e308, 1e308, 5).empty());  // the span overflows
  EXPECT_EQ(nice_ticks(0, 5e-324, 3).size(), 1u);     // a denormal span: one tick, no endless loop
}

TEST(ChartMath, TickLabels) {
  EXPECT_EQ(format_chart_tick(1500, 500, false), "1500");
  EXPECT_EQ(format_chart_tick(0.25, 0.05, false), "0.25");
  EXPECT_EQ(format_chart_tick(2.3, 0.1, false), "2.3");
  EXPECT_EQ(format_chart_tick(1.5e-4, 5e-5, true), "1.5e-4");
  EXPECT_EQ(format_chart_tick(2e-4, 1e-4, true), "2e-4");
  EXPECT_EQ(format_chart_tick(3e6, 1e6, true), "3e6");
  EXPECT_EQ(format_chart_tick(1e-17, 0.1, false), "0");
  EXPECT_EQ(format_chart_value(3e-4), "3e-4");
  EXPECT_EQ(format_chart_value(2.34567), "2.346");
  EXPECT_EQ(format_chart_value(0.00125), "0.00125");
  EXPECT_EQ(format_chart_value(1200), "1200");
  EXPECT_EQ(format_chart_value(kNaN), "nan");
}

TEST(ChartMath, DecimationKeepsEachColumnsExtremesAndGaps) {
  std::vector<double> x(100000), y(100000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i), y[i] = std::sin(double(i) * 0.01);
  y[54321] = 50;     // a spike a single pixel column must still show
  y[70000] = kNaN;  // a gap splits the line
  ChartAxis ax{.lo = 0, .hi = 99999, .px_lo = 0, .px_hi = 500};
  ChartAxis ay{.lo = -1, .hi = 1, .px_lo = 300, .px_hi = 0};
  ChartPolylines p;
  build_polylines(x, y, ax, ay, p);
  EXPECT_EQ(p.visible, 99999u);
  EXPECT_LE(p.points.size(), 4u * 501);
  EXPECT_GE(p.points.size(), 2u * 500);
  ASSERT_EQ(p.run_ends.size(), 2u);
  EXPECT_EQ(p.run_ends.back(), p.points.size());
  float top = 1e9f;
  for (ImVec2 q : p.points) top = std::min(top, q.y);
  EXPECT_NEAR(top, ay.to_px(50), 1e-3);

  ChartAxis zoomed{.lo = 100, .hi = 110, .px_lo = 0, .px_hi = 500};  // few points: all of them, and one beyond each edge
  build_polylines(x, y, zoomed, ay, p);
  EXPECT_EQ(p.visible, 11u);
  EXPECT_EQ(p.points.size(), 13u);

  std::vector<double> ly{1, -1, 0, 10, 100};  // log scale: non-positive values skipped, the line joins
  ChartAxis log_axis{.lo = 0.5, .hi = 200, .px_lo = 300, .px_hi = 0, .log = true};
  build_polylines(std::span(x).first(5), ly, ax, log_axis, p);
  EXPECT_EQ(p.visible, 3u);
  EXPECT_EQ(p.points.size(), 3u);
  EXPECT_EQ(p.run_ends.size(), 1u);
}

// -----------------------------------------------------------------------------------------------
// write_chart_png

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ls_chart_test_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::vector<ChartSeries> two_series(size_t n) {
  ChartSeries loss{.name = "loss"}, val{.name = "val loss"};
  for (size_t i = 0; i < n; ++i) {
    double x = double(i);
    loss.x.push_back(x);
    loss.y.push_back(2.5 * std::exp(-x / double(n)) + 0.1 * std::sin(x * 0.7));
    if (i % 10 == 0) {
      val.x.push_back(x);
      val.y.push_back(2.6 * std::exp(-x / double(n)));
    }
  }
  return {loss, val};
}

TEST(ChartPng, DecodesToTheSizeWithTheSeriesColours) {
  TempDir dir;
  auto series = two_series(500);
  series.push_back({.name = "custom", .x = {0, 499}, .y = {1.0, 1.0}, .color = IM_COL32(250, 0, 250, 255)});
  ChartView view{.smoothing = 0.6f};
  std::filesystem::path file = dir.path / "chart.png";
  write_chart_png(file, series, view, 640, 360);

  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(file.c_str(), &w, &h, &channels, 4);
  ASSERT_NE(pixels, nullptr) << stbi_failure_reason();
  EXPECT_EQ(w, 640);
  EXPECT_EQ(h, 360);
  std::set<ImU32> colours;
  size_t text_like = 0;
  for (int i = 0; i < w * h; ++i) {
    const unsigned char* p = pixels + size_t(i) * 4;
    colours.insert(IM_COL32(p[0], p[1], p[2], p[3]));
    if (p[0] > 150 && p[0] == p[1] - 4 && p[1] == p[2] - 8) ++text_like;  // kChartText, fully covered
  }
  stbi_image_free(pixels);
  for (size_t i = 0; i < series.size(); ++i) {
    ImU32 c = chart_series_color(series[i], i);
    EXPECT_TRUE(colours.count(c)) << "series " << i << " colour " << std::hex << c << " not in the image";
  }
  EXPECT_TRUE(colours.count(kChartBackground));
  EXPECT_TRUE(colours.count(kChartPlotBackground));
  EXPECT_GT(text_like, 50u) << "tick labels and legend drawn";
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp." + std::to_string(::getpid())));
}

TEST(ChartPng, EdgeCasesStillWriteAnImage) {
  TempDir dir;
  std::vector<std::vector<ChartSeries>> cases{
      {},
      {{.name = "empty"}},
      {{.name = "one", .x = {5}, .y = {1.5}}},
      {{.name = "flat", .x = {0, 1, 2}, .y = {3, 3, 3}}},
      {{.name = "nan", .x = {0, 1, 2}, .y = {kNaN, kInf, -kInf}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    for (bool log_y : {false, true}) {
      std::filesystem::path file = dir.path / ("case" + std::to_string(i) + ".png");
      write_chart_png(file, cases[i], ChartView{.log_y = log_y}, 200, 120);
      int w = 0, h = 0, channels = 0;
      EXPECT_TRUE(stbi_info(file.c_str(), &w, &h, &channels)) << file;
      EXPECT_EQ(w, 200);
    }
  }
}

TEST(ChartPng, UnwritablePathOrSizeThrowsNamingTheFile) {
  auto series = two_series(20);
  std::string missing = "/nonexistent-dir-for-ls-chart-test/chart.png";
  test::expect_error_naming([&] { write_chart_png(missing, series, ChartView{}, 300, 200); }, missing);
  TempDir dir;
  std::filesystem::path file = dir.path / "tiny.png";
  test::expect_error_naming([&] { write_chart_png(file, series, ChartView{}, 0, 200); }, file.string());
  EXPECT_FALSE(std::filesystem::exists(file));
}

// -----------------------------------------------------------------------------------------------
// draw_chart in a headless ImGui context

class ChartWidget : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {1280, 800};
    io.DeltaTime = 1.0f / 60;
    io.IniFilename = nullptr;
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as the Vulkan backend: >64k vertices
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // One frame: a window at the origin holding an 800×400 chart; returns draw_chart's count.
  size_t frame(std::span<const ChartSeries> series, ChartView& view) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize({1000, 600});
    ImGui::Begin("charts", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove);
    auto t0 = std::chrono::steady_clock::now();
    size_t n = draw_chart("loss", series, view, {800, 400});
    last_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    item_min = ImGui::GetItemRectMin(), item_max = ImGui::GetItemRectMax();
    ImGui::End();
    ImGui::Render();
    return n;
  }
  // A point at fractions of the chart's rectangle (known after the first frame).
  ImVec2 at(float fx, float fy) const {
    return {item_min.x + fx * (item_max.x - item_min.x), item_min.y + fy * (item_max.y - item_min.y)};
  }
  static ImGuiIO& io() { return ImGui::GetIO(); }

  ImVec2 item_min, item_max;
  double last_ms = 0;
};

TEST_F(ChartWidget, DrawsEveryVisiblePointAndFitsTheData) {
  auto series = two_series(1000);
  series[0].y[10] = kNaN;  // a gap: not a drawn point
  ChartView view;
  EXPECT_EQ(frame(series, view), 999u + 100u);
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 1000);
  EXPECT_EQ(item_max.x - item_min.x, 800);
  EXPECT_TRUE(view.auto_fit);
  EXPECT_EQ(view.x_min, 0);
  EXPECT_EQ(view.x_max, 999);
  double lo = 1e9, hi = -1e9;
  for (const ChartSeries& s : series)
    for (double v : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_NEAR(view.y_min, lo - 0.05 * (hi - lo), 1e-12);  // 5% padding
  EXPECT_NEAR(view.y_max, hi + 0.05 * (hi - lo), 1e-12);
}

TEST_F(ChartWidget, WheelZoomsXAroundTheCursorAndShiftZoomsY) {
  auto series = two_series(1000);
  ChartView view;
  frame(series, view);
  ChartView before = view;
  io().MousePos = at(0.75f, 0.5f);
  io().MouseWheel = 1;
  frame(series, view);
  io().MouseWheel = 0;
  EXPECT_FALSE(view.auto_fit);
  double f = (view.x_max - view.x_min) / (before.x_max - before.x_min);
  EXPECT_NEAR(f, 0.85, 1e-9);
  double centre = (view.x_min - f * before.x_min) / (1 - f);  // the fixed point of the zoom
  double frac = (centre - before.x_min) / (before.x_max - before.x_min);
  EXPECT_GT(frac, 0.7);  // the cursor is at 75% of the chart; the plot starts after the y labels
  EXPECT_LT(frac, 0.8);
  EXPECT_EQ(view.y_min, before.y_min);  // y untouched without Shift
  EXPECT_EQ(view.y_max, before.y_max);
  size_t visible = frame(series, view);
  EXPECT_LT(visible, 1100u);
  EXPECT_GT(visible, 800u);

  before = view;
  io().KeyShift = true;
  io().MouseWheel = 2;
  frame(series, view);
  io().KeyShift = false;
  io().MouseWheel = 0;
  EXPECT_NEAR((view.y_max - view.y_min) / (before.y_max - before.y_min), 0.85 * 0.85, 1e-9);
  EXPECT_EQ(view.x_min, before.x_min);
  EXPECT_EQ(view.x_max, before.x_max);

  view.log_y = true;  // on a log scale y zooms by decades and stays positive
  view.y_min = 0.5, view.y_max = 5;
  before = view;
  io().KeyShift = true;
  io().MouseWheel = -1;
  frame(series, view);
  io().KeyShift = false;
  io().MouseWheel = 0;
  EXPECT_GT(view.y_min, 0);
  EXPECT_NEAR(std::log10(view.y_max / view.y_min), 1 / 0.85, 1e-9);
}

TEST_F(ChartWidget, DragPansAndDoubleClickFitsAgain) {
  auto series = two_series(1000);
  ChartView view;
  frame(series, view);
  ChartView fitted = view;
  io().MousePos = at(0.5f, 0.5f);
  io().MouseDown[0] = true;
  frame(series, view);
  io().MousePos = {at(0.5f, 0.5f).x + 100, at(0.5f, 0.5f).y + 40};
  frame(series, view);
  io().MouseDown[0] = false;
  frame(series, view);
  EXPECT_FALSE(view.auto_fit);
  double span = fitted.x_max - fitted.x_min, shift = fitted.x_min - view.x_min;
  EXPECT_NEAR(view.x_max - view.x_min, span, 1e-9);
  EXPECT_GT(shift, span * 100 / 800);  // dragged right: earlier steps come in; the plot is < 800 px
  EXPECT_LT(shift, span * 100 / 650);
  EXPECT_GT(view.y_min, fitted.y_min);  // dragged down: the view moves up

  for (int click = 0; click < 2; ++click) {
    io().MouseDown[0] = true;
    frame(series, view);
    io().MouseDown[0] = false;
    frame(series, view);
  }
  EXPECT_TRUE(view.auto_fit);
  EXPECT_EQ(view.x_min, fitted.x_min);
  EXPECT_EQ(view.x_max, fitted.x_max);
}

TEST_F(ChartWidget, HoverShowsATooltip) {
  auto series = two_series(300);
  ChartView view{.smoothing = 0.5f};
  frame(series, view);
  EXPECT_EQ(ImGui::GetDrawData()->CmdListsCount, 1);
  io().MousePos = at(0.5f, 0.5f);
  frame(series, view);  // ImGui hides an auto-sized window in its first frame, while it measures it
  frame(series, view);
  EXPECT_EQ(ImGui::GetDrawData()->CmdListsCount, 2) << "the chart's window and the tooltip";
  EXPECT_TRUE(view.auto_fit) << "hovering changes nothing";
}

TEST_F(ChartWidget, EdgeCasesGiveADrawableRange) {
  struct Case {
    const char* what;
    std::vector<ChartSeries> series;
    bool log_y;
    size_t points;
  };
  std::vector<Case> cases{
      {"no series", {}, false, 0},
      {"empty series", {{.name = "a"}}, false, 0},
      {"one point", {{.name = "a", .x = {7}, .y = {2}}}, false, 1},
      {"all equal", {{.name = "a", .x = {0, 1, 2}, .y = {3, 3, 3}}}, false, 3},
      {"all zero", {{.name = "a", .x = {0, 1, 2}, .y = {0, 0, 0}}}, false, 3},
      {"same x", {{.name = "a", .x = {4, 4, 4}, .y = {1, 2, 3}}}, false, 3},
      {"non-finite", {{.name = "a", .x = {0, 1, 2, 3}, .y = {kNaN, kInf, -kInf, 1}}}, false, 1},
      {"log skips non-positive", {{.name = "a", .x = {0, 1, 2, 3}, .y = {-1, 0, 1e-3, 10}}}, true, 2},
      {"log of nothing positive", {{.name = "a", .x = {0, 1}, .y = {-1, 0}}}, true, 0},
      {"huge values", {{.name = "a", .x = {0, 1}, .y = {-1e300, 1e300}}}, false, 2},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    ChartView view{.log_y = c.log_y};
    EXPECT_EQ(frame(c.series, view), c.points);
    EXPECT_TRUE(std::isfinite(view.x_min) && std::isfinite(view.x_max) && view.x_max > view.x_min);
    EXPECT_TRUE(std::isfinite(view.y_min) && std::isfinite(view.y_max) && view.y_max > view.y_min);
    if (c.log_y) {
      EXPECT_GT(view.y_min, 0);
    }
    io().MousePos = at(0.5f, 0.5f);  // hover too
    frame(c.series, view);
    io().MousePos = {-1, -1};
  }
  ChartView broken{.auto_fit = false, .x_min = kNaN, .x_max = 3, .y_min = 5, .y_max = 5};
  auto series = two_series(10);
  frame(series, broken);
  EXPECT_TRUE(broken.x_max > broken.x_min && broken.y_max > broken.y_min);
}

TEST_F(ChartWidget, AHundredThousandPointsDrawFast) {
  ChartSeries big{.name = "loss"};
  for (int i = 0; i < 100000; ++i) {
    big.x.push_back(i);
    big.y.push_back(3 * std::exp(-i / 30000.0) + 0.2 * std::sin(i * 0.37) + 0.05 * std::sin(i * 12.1));
  }
  std::vector<ChartSeries> series{big, big};
  series[1].name = "copy";
  for (double& v : series[1].y) v *= 1.1;
  ChartView view{.smoothing = 0.9f};
  double best = 1e9;
  for (int i = 0; i < 20; ++i) {  // the best of many: a wall-clock figure on a machine others may share
    io().MousePos = at(0.3f, 0.5f);  // hovering: the tooltip smooths too
    EXPECT_EQ(frame(series, view), 200000u);
    if (i > 0) best = std::min(best, last_ms);
  }
  std::printf("draw_chart, 2 series × 100k points, smoothing and hover: %.2f ms\n", best);
  // A frame at 40 fps on the 2-core CI machine (measured there: 10.1-10.7 ms on 2026-11-27, idle; the bound was
  // 10 ms and failed on a slower day). What keeps it fast on any machine is the decimation checked below.
  if (!test::kSanitizedBuild) {
    EXPECT_LT(best, 25.0);
  }
  EXPECT_LT(ImGui::GetDrawData()->TotalVtxCount, 60000) << "decimated to about a point per pixel column";
}

}  // namespace
}  // namespace ls::ui
