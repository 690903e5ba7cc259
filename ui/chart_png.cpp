// write_chart_png(): the chart of ui/chart_paint.h painted on the CPU into RGBA8 pixels. Text comes
// from DejaVu Sans (built into the binary, ui/embedded_font.h) through stb_truetype; lines are anti-aliased
// by the distance of each pixel centre to the segment; stb_image_write encodes the PNG and the file is
// written atomically. Debian's libstb (linked through pkg-config imgui) holds the stb implementations.
#include <stb_image_write.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "error.h"
#include "ui/chart.h"
#include "ui/chart_paint.h"
#include "ui/embedded_font.h"
#include "util/atomic_file.h"

namespace ls::ui {

namespace {

constexpr float kFontPx = 13;  // ascent + descent, as ImGui's default font size
constexpr int kMinSide = 16, kMaxSide = 8192;

struct Font {
  stbtt_fontinfo info{};
  float scale = 1, ascent = 0;
};

void load_font(Font& font, const std::filesystem::path& file) {
  const unsigned char* data = dejavu_sans_ttf().data();
  int offset = stbtt_GetFontOffsetForIndex(data, 0);
  if (dejavu_sans_ttf().empty() || offset < 0 || !stbtt_InitFont(&font.info, data, offset))
    throw Error(file.string() + ": cannot draw the chart: the built-in font is not a TrueType font");
  font.scale = stbtt_ScaleForPixelHeight(&font.info, kFontPx);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&font.info, &ascent, &descent, &gap);
  font.ascent = float(ascent) * font.scale;
}

// UTF-8 to code points; a byte that starts no valid sequence becomes U+FFFD.
std::vector<int> code_points(std::string_view s) {
  std::vector<int> out;
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + size_t(len) > s.size()) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    int cp = len == 1 ? b : b & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3F);
    out.push_back(cp);
    i += size_t(len);
  }
  return out;
}

// Distance from p to the segment ab.
float segment_distance(float px, float py, ImVec2 a, ImVec2 b) {
  float dx = b.x - a.x, dy = b.y - a.y, len2 = dx * dx + dy * dy;
  float t = len2 > 0 ? std::clamp(((px - a.x) * dx + (py - a.y) * dy) / len2, 0.0f, 1.0f) : 0.0f;
  float ex = px - (a.x + t * dx), ey = py - (a.y + t * dy);
  return std::sqrt(ex * ex + ey * ey);
}

// RGBA8 pixels, (0, 0) top left, pixel (i, j) centred at (i + 0.5, j + 0.5), alpha blending "over".
class RasterCanvas final : public ChartCanvas {
 public:
  RasterCanvas(int width, int height, const Font& font)
      : w_(width), font_(font), pixels_(size_t(width) * size_t(height) * 4), mask_(size_t(width) * size_t(height)) {
    clips_.push_back({0, 0, width, height});
  }

  const std::vector<uint8_t>& pixels() const { return pixels_; }

  float text_width(std::string_view text) override {
    float w = 0;
    int prev = 0;
    for (int cp : code_points(text)) {
      int advance = 0, lsb = 0;
      stbtt_GetCodepointHMetrics(&font_.info, cp, &advance, &lsb);
      if (prev) w += float(stbtt_GetCodepointKernAdvance(&font_.info, prev, cp)) * font_.scale;
      w += float(advance) * font_.scale;
      prev = cp;
    }
    return w;
  }

  float text_height() override { return kFontPx; }

  void text(ImVec2 top_left, ImU32 color, std::string_view text) override {
    float pen = top_left.x;
    int baseline = int(std::lround(top_left.y + font_.ascent));
    int prev = 0;
    std::vector<unsigned char> glyph;
    for (int cp : code_points(text)) {
      if (prev) pen += float(stbtt_GetCodepointKernAdvance(&font_.info, prev, cp)) * font_.scale;
      prev = cp;
      float origin = std::floor(pen), shift = pen - origin;
      int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
      stbtt_GetCodepointBitmapBoxSubpixel(&font_.info, cp, font_.scale, font_.scale, shift, 0, &x0, &y0, &x1, &y1);
      int gw = x1 - x0, gh = y1 - y0;
      if (gw > 0 && gh > 0) {
        glyph.assign(size_t(gw) * size_t(gh), 0);
        stbtt_MakeCodepointBitmapSubpixel(&font_.info, glyph.data(), gw, gh, gw, font_.scale, font_.scale, shift, 0, cp);
        for (int gy = 0; gy < gh; ++gy)
          for (int gx = 0; gx < gw; ++gx)
            blend(int(origin) + x0 + gx, baseline + y0 + gy, color, float(glyph[size_t(gy * gw + gx)]) / 255.0f);
      }
      int advance = 0, lsb = 0;
      stbtt_GetCodepointHMetrics(&font_.info, cp, &advance, &lsb);
      pen += float(advance) * font_.scale;
    }
  }

  void line(ImVec2 a, ImVec2 b, ImU32 color, float thickness) override {
    ImVec2 segment[2] = {a, b};
    polyline(segment, color, thickness);
  }

  // Coverage of all segments into a mask (max, so joints are not blended twice), then composited once.
  void polyline(std::span<const ImVec2> points, ImU32 color, float thickness) override {
    if (points.size() < 2) return;
    float reach = thickness / 2 + 0.5f;
    const Clip& c = clips_.back();
    int bx0 = c.x1, by0 = c.y1, bx1 = c.x0, by1 = c.y0;  // the mask's touched box
    for (size_t k = 0; k + 1 < points.size(); ++k) {
      ImVec2 a = points[k], b = points[k + 1];
      int x0 = std::max(c.x0, int(std::floor(std::min(a.x, b.x) - reach)));
      int x1 = std::min(c.x1, int(std::ceil(std::max(a.x, b.x) + reach)));
      int y0 = std::max(c.y0, int(std::floor(std::min(a.y, b.y) - reach)));
      int y1 = std::min(c.y1, int(std::ceil(std::max(a.y, b.y) + reach)));
      if (x0 >= x1 || y0 >= y1) continue;
      bx0 = std::min(bx0, x0), by0 = std::min(by0, y0), bx1 = std::max(bx1, x1), by1 = std::max(by1, y1);
      for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
          float cover = std::clamp(reach - segment_distance(float(x) + 0.5f, float(y) + 0.5f, a, b), 0.0f, 1.0f);
          float& m = mask_[size_t(y) * size_t(w_) + size_t(x)];
          m = std::max(m, cover);
        }
    }
    for (int y = by0; y < by1; ++y)
      for (int x = bx0; x < bx1; ++x) {
        float& m = mask_[size_t(y) * size_t(w_) + size_t(x)];
        if (m > 0) blend(x, y, color, m);
        m = 0;
      }
  }

  void rect_filled(ImVec2 min, ImVec2 max, ImU32 color) override {
    const Clip& c = clips_.back();
    int x0 = std::max(c.x0, int(std::ceil(min.x - 0.5f))), x1 = std::min(c.x1, int(std::ceil(max.x - 0.5f)));
    int y0 = std::max(c.y0, int(std::ceil(min.y - 0.5f))), y1 = std::min(c.y1, int(std::ceil(max.y - 0.5f)));
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) blend(x, y, color, 1);
  }

  void dot(ImVec2 center, float radius, ImU32 color) override {
    const Clip& c = clips_.back();
    int x0 = std::max(c.x0, int(std::floor(center.x - radius - 1))), x1 = std::min(c.x1, int(std::ceil(center.x + radius + 1)));
    int y0 = std::max(c.y0, int(std::floor(center.y - radius - 1))), y1 = std::min(c.y1, int(std::ceil(center.y + radius + 1)));
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        float dist = std::hypot(float(x) + 0.5f - center.x, float(y) + 0.5f - center.y);
        blend(x, y, color, std::clamp(radius + 0.5f - dist, 0.0f, 1.0f));
      }
  }

  void push_clip(ImVec2 min, ImVec2 max) override {
    const Clip& c = clips_.back();
    clips_.push_back({std::max(c.x0, int(std::floor(min.x))), std::max(c.y0, int(std::floor(min.y))),
                      std::min(c.x1, int(std::ceil(max.x))), std::min(c.y1, int(std::ceil(max.y)))});
  }

  void pop_clip() override {
    if (clips_.size() > 1) clips_.pop_back();
  }

 private:
  struct Clip {
    int x0, y0, x1, y1;  // pixels [x0, x1) × [y0, y1)
  };

  void blend(int x, int y, ImU32 color, float coverage) {
    const Clip& c = clips_.back();
    if (x < c.x0 || y < c.y0 || x >= c.x1 || y >= c.y1 || coverage <= 0) return;
    float a = float((color >> IM_COL32_A_SHIFT) & 0xFF) / 255.0f * std::min(coverage, 1.0f);
    uint8_t* p = &pixels_[(size_t(y) * size_t(w_) + size_t(x)) * 4];
    const int shifts[3] = {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT};
    for (int k = 0; k < 3; ++k) {
      float src = float((color >> shifts[k]) & 0xFF);
      p[k] = uint8_t(std::lround(float(p[k]) + (src - float(p[k])) * a));
    }
    p[3] = uint8_t(std::lround(float(p[3]) + (255.0f - float(p[3])) * a));
  }

  int w_;  // pixels a row (the height is in clips_.front())
  const Font& font_;
  std::vector<uint8_t> pixels_;
  std::vector<float> mask_;
  std::vector<Clip> clips_;
};

}  // namespace

void write_chart_png(const std::filesystem::path& file, std::span<const ChartSeries> series, const ChartView& view,
                     int width, int height) {
  if (width < kMinSide || height < kMinSide || width > kMaxSide || height > kMaxSide)
    throw Error(file.string() + ": cannot draw the chart at " + std::to_string(width) + "x" + std::to_string(height) +
                " pixels (each side " + std::to_string(kMinSide) + " to " + std::to_string(kMaxSide) + ")");
  Font font;
  load_font(font, file);
  RasterCanvas canvas(width, height, font);
  ChartView v = view;
  fit_chart_view(series, v);
  ChartLayout layout = layout_chart(canvas, {0, 0}, {float(width), float(height)}, v);
  paint_chart(canvas, layout, series, v);

  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), size_t(size));
  };
  if (!stbi_write_png_to_func(append, &png, width, height, 4, canvas.pixels().data(), width * 4))
    throw Error(file.string() + ": cannot encode the chart as PNG");
  write_file_atomically(file, png);
}

}  // namespace ls::ui
