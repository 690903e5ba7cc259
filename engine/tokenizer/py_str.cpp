#include "tokenizer/py_str.h"

#include <utf8proc.h>

namespace ls::tok {

namespace {

// The code point starting at s[i] and its length in bytes; length 0 when the bytes are not UTF-8.
std::pair<char32_t, size_t> decode_at(std::string_view s, size_t i) {
  utf8proc_int32_t cp = 0;
  const auto n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
  if (n <= 0) return {0, 0};
  return {char32_t(cp), size_t(n)};
}

// Bytes of leading whitespace.
size_t leading_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto [cp, n] = decode_at(s, i);
    if (n == 0 || !py_isspace(cp)) break;
    i += n;
  }
  return i;
}

// Bytes of trailing whitespace: step back to the start of the last code point and decode it.
size_t trailing_space(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    auto [cp, n] = decode_at(s.substr(0, end), start);
    if (n != end - start || !py_isspace(cp)) break;
    end = start;
  }
  return s.size() - end;
}

}  // namespace

bool py_isspace(char32_t cp) {
  if (cp > 0x10FFFF) return false;
  const utf8proc_property_t* p = utf8proc_get_property(utf8proc_int32_t(cp));
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

std::string py_lstrip(std::string_view s) { return std::string(s.substr(leading_space(s))); }
std::string py_rstrip(std::string_view s) { return std::string(s.substr(0, s.size() - trailing_space(s))); }
std::string py_strip(std::string_view s) { return py_lstrip(py_rstrip(s)); }

std::string py_lstrip(std::string_view s, std::string_view chars) {
  const size_t b = s.find_first_not_of(chars);
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b));
}
std::string py_rstrip(std::string_view s, std::string_view chars) {
  const size_t e = s.find_last_not_of(chars);
  return e == std::string_view::npos ? std::string() : std::string(s.substr(0, e + 1));
}
std::string py_strip(std::string_view s, std::string_view chars) { return py_lstrip(py_rstrip(s, chars), chars); }

}  // namespace ls::tok
