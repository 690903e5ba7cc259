#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "error.h"

namespace ls::tok {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t utf8_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

namespace {
// Length of the valid UTF-8 sequence at s[i], or 0 if invalid; *maximal_invalid gets the length of the
// maximal prefix of a valid sequence (the bytes Rust replaces with one U+FFFD).
size_t valid_sequence(std::string_view s, size_t i, size_t* maximal_invalid) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *maximal_invalid = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
  else if (b0 == 0xE0) need = 2, lo = 0xA0;
  else if (b0 >= 0xE1 && b0 <= 0xEC) need = 2;
  else if (b0 == 0xED) need = 2, hi = 0x9F;
  else if (b0 >= 0xEE && b0 <= 0xEF) need = 2;
  else if (b0 == 0xF0) need = 3, lo = 0x90;
  else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
  else if (b0 == 0xF4) need = 3, hi = 0x8F;
  else return 0;
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    *maximal_invalid = k + 1;
  }
  return need + 1;
}
}  // namespace

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t bad;
    if (size_t n = valid_sequence(s, i, &bad)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t bad;
    size_t n = valid_sequence(s, i, &bad);
    if (!n) return false;
    i += n;
  }
  return true;
}

std::string normalize(std::string_view text, NormalForm form) {
  if (text.empty()) return {};
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), utf8proc_ssize_t(text.size()), &out,
                        utf8proc_option_t(options));
  if (n < 0) throw Error(std::string("unicode normalisation failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

}  // namespace ls::tok
