#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

// Length of the valid sequence at s[i], or 0 if none starts there; `valid_prefix` gets the length
// of the longest prefix that could still start a valid sequence (>= 1): the "maximal subpart".
size_t sequence_at(std::string_view s, size_t i, size_t& valid_prefix) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  valid_prefix = 1;
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char d = b(i + k);
    bool ok = k == 1 ? (d >= lo && d <= hi) : (d >= 0x80 && d <= 0xBF);
    if (!ok) return 0;
    valid_prefix = k + 1;
  }
  return len;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  size_t i = 0, prefix = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    size_t n = sequence_at(s, i, prefix);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0, prefix = 0;
  while (i < bytes.size()) {
    size_t n = sequence_at(bytes, i, prefix);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append(kReplacementChar);
      i += prefix;
    }
  }
  return out;
}

size_t utf8_length(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

char32_t next_code_point(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[k])); };
  char32_t c = b(i);
  size_t n = utf8_length(static_cast<unsigned char>(c));
  if (n == 1) { ++i; return c; }
  if (i + n > s.size()) { i = s.size(); return 0xFFFD; }  // not reached on valid input
  char32_t cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  i += n;
  return cp;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace ls::tok
