#pragma once
// GPT-2's bytes_to_unicode: the byte-level BPE alphabet. Bytes that are printable Latin-1 ('!'..'~',
// '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 map, in byte order, to U+0100, U+0101, ...
// (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#include <array>
#include <cstdint>
#include <string>

namespace ls::tok {

struct ByteLevelAlphabet {
  std::array<std::string, 256> byte_to_utf8;  // each byte's character, UTF-8 encoded
  std::array<int16_t, 0x144> char_to_byte;    // code point -> byte, -1 for characters outside the alphabet
};

const ByteLevelAlphabet& byte_level_alphabet();

}  // namespace ls::tok
