#pragma once
// UTF-8 helpers for the tokenizer: validation as Rust's `str` defines it (no surrogates, no overlong
// forms, nothing past U+10FFFF) and the lossy conversion of Rust's String::from_utf8_lossy (each
// maximal invalid subpart becomes one U+FFFD, as the WHATWG decoder does).
#include <cstddef>
#include <string>
#include <string_view>

namespace ls::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Byte offset of the first invalid sequence in `s`, or std::string_view::npos if `s` is valid.
size_t find_invalid_utf8(std::string_view s);

// `bytes` as valid UTF-8, each maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// The code point starting at s[i] of valid UTF-8 `s`; advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

// Byte length of the sequence whose lead byte is `lead` (1 for a stray continuation byte).
size_t utf8_length(unsigned char lead);

void append_utf8(std::string& out, char32_t c);

// The value of a hexadecimal digit (0-9, a-f, A-F), or -1: for escapes such as \xhh and <0xNN>.
int hex_digit(char c);

}  // namespace ls::tok
