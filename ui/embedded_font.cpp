#include "ui/embedded_font.h"

#include <cstddef>

// Between these symbols lie the font file's bytes (assets/CMakeLists.txt, ls_embed).
extern "C" {
extern const unsigned char ls_asset_dejavu_sans_ttf[], ls_asset_dejavu_sans_ttf_end[];
}

namespace ls::ui {

std::span<const unsigned char> dejavu_sans_ttf() {
  return {ls_asset_dejavu_sans_ttf, size_t(ls_asset_dejavu_sans_ttf_end - ls_asset_dejavu_sans_ttf)};
}

}  // namespace ls::ui
