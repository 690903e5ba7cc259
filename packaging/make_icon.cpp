// lorastudio-make-icon OUT_DIR: draws the app icon, the LoRA picture ΔW = B·A (a tall orange B on the left, a
// wide teal A on top) with a falling loss curve where their product goes, on a dark rounded square.
// Writes OUT_DIR/lorastudio.svg and OUT_DIR/<N>/lorastudio.png for N in 16 32 48 64 128 256 (the hicolor
// sizes the .deb installs), all from the one shape table below. PNGs are rasterised with 8×8 samples per
// pixel (coverage-weighted, premultiplied colours) and encoded by stb_image_write; files are written
// atomically. Run by the build (packaging/CMakeLists.txt); the output is the same on every run.
#include <stb_image_write.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "error.h"
#include "util/atomic_file.h"

namespace ls::packaging {
namespace {

namespace fs = std::filesystem;

struct Rgb {
  float r, g, b;
};
struct Point {
  float x, y;
};

// The icon in a unit square, y down. Shapes are drawn in order, later ones on top.
struct RoundedRect {
  float x0, y0, x1, y1, radius;
  Rgb fill;
};
constexpr std::array kRects = {
    RoundedRect{0.04f, 0.04f, 0.96f, 0.96f, 0.20f, {0.110f, 0.133f, 0.188f}},  // background #1c2230
    RoundedRect{0.15f, 0.32f, 0.29f, 0.85f, 0.04f, {0.949f, 0.620f, 0.298f}},  // B (d×r) #f29e4c
    RoundedRect{0.32f, 0.15f, 0.85f, 0.29f, 0.04f, {0.298f, 0.788f, 0.690f}},  // A (r×d) #4cc9b0
};
constexpr Rgb kCurveColour{0.925f, 0.941f, 0.969f};  // #ecf0f7
constexpr float kCurveWidth = 0.075f;
constexpr int kCurvePoints = 48;
constexpr std::array kSizes = {16, 32, 48, 64, 128, 256};
constexpr int kSamples = 8;  // per pixel side

// Loss falling fast then levelling off, across the product's square: y = y0 + h·(1 − e^(−4u))/(1 − e^(−4)).
std::vector<Point> curve() {
  std::vector<Point> p;
  for (int i = 0; i < kCurvePoints; ++i) {
    float u = float(i) / float(kCurvePoints - 1);
    p.push_back({0.37f + 0.46f * u, 0.40f + 0.42f * (1 - std::exp(-4 * u)) / (1 - std::exp(-4.0f))});
  }
  return p;
}

bool inside(const RoundedRect& r, Point p) {
  if (p.x < r.x0 || p.x > r.x1 || p.y < r.y0 || p.y > r.y1) return false;
  float cx = std::clamp(p.x, r.x0 + r.radius, r.x1 - r.radius);
  float cy = std::clamp(p.y, r.y0 + r.radius, r.y1 - r.radius);
  return (p.x - cx) * (p.x - cx) + (p.y - cy) * (p.y - cy) <= r.radius * r.radius;
}

float distance_to_segment(Point p, Point a, Point b) {
  float dx = b.x - a.x, dy = b.y - a.y;
  float t = std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / (dx * dx + dy * dy), 0.0f, 1.0f);
  float ex = a.x + t * dx - p.x, ey = a.y + t * dy - p.y;
  return std::sqrt(ex * ex + ey * ey);
}

bool on_curve(const std::vector<Point>& c, Point p) {
  for (size_t i = 0; i + 1 < c.size(); ++i)
    if (distance_to_segment(p, c[i], c[i + 1]) <= kCurveWidth / 2) return true;
  return false;
}

// RGBA8, not premultiplied (PNG's convention), `side` × `side`.
std::vector<uint8_t> rasterise(int side, const std::vector<Point>& c) {
  std::vector<uint8_t> rgba(size_t(side) * size_t(side) * 4);
  const float step = 1.0f / float(side * kSamples);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      float r = 0, g = 0, b = 0, covered = 0;
      for (int sy = 0; sy < kSamples; ++sy)
        for (int sx = 0; sx < kSamples; ++sx) {
          Point p{(float(x * kSamples + sx) + 0.5f) * step, (float(y * kSamples + sy) + 0.5f) * step};
          const Rgb* colour = nullptr;
          for (const auto& rect : kRects)
            if (inside(rect, p)) colour = &rect.fill;
          if (colour && on_curve(c, p)) colour = &kCurveColour;
          if (!colour) continue;
          r += colour->r, g += colour->g, b += colour->b, covered += 1;
        }
      uint8_t* px = &rgba[(size_t(y) * size_t(side) + size_t(x)) * 4];
      auto byte = [](float v) { return uint8_t(std::lround(std::clamp(v, 0.0f, 1.0f) * 255)); };
      if (covered > 0) px[0] = byte(r / covered), px[1] = byte(g / covered), px[2] = byte(b / covered);
      px[3] = byte(covered / float(kSamples * kSamples));
    }
  return rgba;
}

std::string hex(Rgb c) {
  auto byte = [](float v) { return int(std::lround(v * 255)); };
  char s[8];
  std::snprintf(s, sizeof s, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return s;
}

std::string number(float v) {  // in the SVG's 256-unit view box, 2 decimals at most
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", double(v) * 256);
  std::string t = s;
  while (t.back() == '0') t.pop_back();
  if (t.back() == '.') t.pop_back();
  return t;
}

std::string svg(const std::vector<Point>& c) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"256\" height=\"256\" viewBox=\"0 0 256 256\">\n";
  for (const auto& r : kRects)
    s += "  <rect x=\"" + number(r.x0) + "\" y=\"" + number(r.y0) + "\" width=\"" + number(r.x1 - r.x0) +
         "\" height=\"" + number(r.y1 - r.y0) + "\" rx=\"" + number(r.radius) + "\" fill=\"" + hex(r.fill) + "\"/>\n";
  s += "  <polyline fill=\"none\" stroke=\"" + hex(kCurveColour) + "\" stroke-width=\"" + number(kCurveWidth) +
       "\" stroke-linecap=\"round\" stroke-linejoin=\"round\" points=\"";
  for (size_t i = 0; i < c.size(); ++i) {
    if (i) s += ' ';
    s += number(c[i].x) + "," + number(c[i].y);
  }
  s += "\"/>\n</svg>\n";
  return s;
}

void write_png(const fs::path& file, int side, const std::vector<uint8_t>& rgba) {
  std::string bytes;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), size_t(size));
  };
  if (!stbi_write_png_to_func(append, &bytes, side, side, 4, rgba.data(), side * 4))
    throw Error(file.string() + ": PNG encoding failed");
  write_file_atomically(file, bytes);
}

}  // namespace
}  // namespace ls::packaging

int main(int argc, char** argv) {
  using namespace ls::packaging;
  if (argc != 2) {
    std::fprintf(stderr, "usage: lorastudio-make-icon OUT_DIR\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    const auto c = curve();
    fs::create_directories(out);
    ls::write_file_atomically(out / "lorastudio.svg", svg(c));
    for (int side : kSizes) {
      fs::create_directories(out / std::to_string(side));
      write_png(out / std::to_string(side) / "lorastudio.png", side, rasterise(side, c));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lorastudio-make-icon: %s\n", e.what());
    return 1;
  }
}
