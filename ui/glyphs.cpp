#include "ui/glyphs.h"

#include <algorithm>
#include <bitset>
#include <string>

namespace ls::ui {

namespace {

struct Glyphs {
  std::bitset<0x110000> noted;
  std::vector<uint32_t> fresh;
  std::string font;
  uint32_t missing = 0;
};

Glyphs& glyphs() {
  static Glyphs g;
  return g;
}

// The next codepoint of s from i (advancing i), or 0xFFFFFFFF for a byte that starts no valid sequence.
uint32_t next_codepoint(std::string_view s, size_t& i) {
  const auto byte = [&](size_t k) { return uint32_t(static_cast<unsigned char>(s[k])); };
  const uint32_t b0 = byte(i++);
  if (b0 < 0x80) return b0;
  const int extra = b0 >= 0xF0 && b0 < 0xF5 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC2 && b0 < 0xE0 ? 1 : -1;
  if (extra < 0 || i + size_t(extra) > s.size()) return 0xFFFFFFFF;
  uint32_t cp = b0 & (0x3F >> extra);
  for (int k = 0; k < extra; ++k) {
    const uint32_t b = byte(i);
    if ((b & 0xC0) != 0x80) return 0xFFFFFFFF;
    cp = (cp << 6) | (b & 0x3F);
    ++i;
  }
  return cp < 0x110000 ? cp : 0xFFFFFFFF;
}

}  // namespace

bool built_in_glyph(uint32_t c) {
  for (size_t i = 0; kBuiltInGlyphRanges[i]; i += 2)
    if (c >= kBuiltInGlyphRanges[i] && c <= kBuiltInGlyphRanges[i + 1]) return true;
  return false;
}

void note_glyphs(std::string_view utf8) {
  Glyphs& g = glyphs();
  for (size_t i = 0; i < utf8.size();) {
    if (static_cast<unsigned char>(utf8[i]) < 0x80) {  // ASCII: the built-in font's
      ++i;
      continue;
    }
    const uint32_t cp = next_codepoint(utf8, i);
    if (cp == 0xFFFFFFFF || built_in_glyph(cp) || g.noted[cp]) continue;
    g.noted[cp] = true;
    g.fresh.push_back(cp);
  }
}

std::vector<uint32_t> take_new_glyphs() {
  std::vector<uint32_t> out = std::move(glyphs().fresh);
  glyphs().fresh.clear();
  std::sort(out.begin(), out.end());
  return out;
}

void set_glyph_report(std::string_view font, uint32_t missing) {
  glyphs().font = std::string(font);
  glyphs().missing = missing;
}

GlyphReport glyph_report() { return {glyphs().font, glyphs().missing}; }

}  // namespace ls::ui
