#pragma once
// The glyphs the window's font lacks. The built-in font (DejaVu Sans) covers Latin, Greek, Cyrillic and
// symbols; Chinese, Japanese and Korean text (Qwen's home languages) needs a system CJK font. The panels note
// the text they show that a user or a model wrote (note_glyphs); between frames the app takes the
// codepoints not yet asked for (take_new_glyphs) and builds them into the atlas from a CJK font, so that only
// the glyphs actually shown are built, not the 20k+ ideographs up front. UI thread only.
#include <cstdint>
#include <string_view>
#include <vector>

namespace ls::ui {

// The built-in font's ranges, as ImGui takes them (first, last, ..., 0): Latin, Greek, Cyrillic, punctuation,
// arrows, mathematical operators, box drawing.
inline constexpr uint16_t kBuiltInGlyphRanges[] = {0x0020, 0x00FF, 0x0100, 0x024F, 0x0370, 0x03FF, 0x0400, 0x04FF,
                                                   0x2000, 0x206F, 0x2190, 0x21FF, 0x2200, 0x22FF, 0x2500, 0x25FF, 0};
bool built_in_glyph(uint32_t codepoint);
// Notes every codepoint of `utf8` outside the built-in font (invalid bytes are skipped).
void note_glyphs(std::string_view utf8);
// The codepoints noted since the last call, each once over the run of the app, ascending.
std::vector<uint32_t> take_new_glyphs();

// What the window could do with them, for the state a UI script reads: the CJK fonts used (comma-separated, ""
// when none was found) and how many noted codepoints no font of the atlas has.
struct GlyphReport {
  std::string_view font;
  uint32_t missing = 0;
};
void set_glyph_report(std::string_view font, uint32_t missing);
GlyphReport glyph_report();

}  // namespace ls::ui
