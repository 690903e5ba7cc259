#pragma once
// DejaVu Sans, built into the binary by assets/CMakeLists.txt (ls_embed): the window's font and the
// chart PNGs' text, with no font file needed at run time.
#include <span>

namespace ls::ui {

std::span<const unsigned char> dejavu_sans_ttf();

}  // namespace ls::ui
