#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

ByteLevelAlphabet make_alphabet() {
  ByteLevelAlphabet a;
  a.char_to_byte.fill(-1);
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    char32_t c = printable(b) ? char32_t(b) : next++;
    append_utf8(a.byte_to_utf8[size_t(b)], c);
    a.char_to_byte[c] = int16_t(b);
  }
  return a;
}

}  // namespace

const ByteLevelAlphabet& byte_level_alphabet() {
  static const ByteLevelAlphabet alphabet = make_alphabet();
  return alphabet;
}

}  // namespace ls::tok
