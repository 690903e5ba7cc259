#include "tokenizer/jinja_source.h"

namespace ls::tok {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
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

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads the literal whose opening quote is at s[i]; returns the index after its closing quote.
size_t read_literal(std::string_view s, size_t i, std::string& value) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      value += s[i++];
      continue;
    }
    const char e = s[i + 1];
    i += 2;
    constexpr std::string_view kEscapes = "ntrabfv\\'\"", kValues = "\n\t\r\a\b\f\v\\'\"";
    if (const size_t at = kEscapes.find(e); at != std::string_view::npos) {
      value += kValues[at];
    } else if (e == '\n') {  // a line continuation
    } else if (e == 'x' || e == 'u' || e == 'U') {
      const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      size_t k = 0;
      for (; k < digits && i + k < s.size() && hex_value(s[i + k]) >= 0; ++k)
        cp = cp * 16 + uint32_t(hex_value(s[i + k]));
      if (k == digits && cp <= 0x10FFFF) {
        append_utf8(value, cp);
        i += k;
      } else {  // not a valid escape (Python would refuse the template): kept as written
        value += '\\';
        value += e;
      }
    } else {  // unknown escapes stay as written, as in Python
      value += '\\';
      value += e;
    }
  }
  return i < s.size() ? i + 1 : i;
}

struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  }
};

void add_canonical_literal(Fnv1a& f, std::string_view value) {
  f.add("\"");
  for (char c : value) {
    if (c == '"')
      f.add("\\\"");
    else if (c == '\\')
      f.add("\\\\");
    else if (c == '\n')
      f.add("\\n");
    else
      f.add(std::string_view(&c, 1));
  }
  f.add("\"");
}

}  // namespace

JinjaSource scan_jinja(std::string_view s) {
  JinjaSource out;
  Fnv1a f;
  size_t i = 0;
  while (i < s.size()) {
    const size_t open = s.find('{', i);
    if (open == std::string_view::npos || open + 1 >= s.size()) {
      f.add(s.substr(i));
      break;
    }
    const char kind = s[open + 1];
    if (kind != '{' && kind != '%' && kind != '#') {
      f.add(s.substr(i, open + 1 - i));
      i = open + 1;
      continue;
    }
    f.add(s.substr(i, open + 2 - i));
    i = open + 2;
    if (kind == '#') {  // comment: no literals inside
      const size_t end = s.find("#}", i);
      const size_t stop = end == std::string_view::npos ? s.size() : end + 2;
      f.add(s.substr(i, stop - i));
      i = stop;
      continue;
    }
    const char close = kind == '{' ? '}' : '%';
    while (i < s.size()) {
      if (s[i] == '\'' || s[i] == '"') {
        std::string value;
        i = read_literal(s, i, value);
        add_canonical_literal(f, value);
        out.literals.push_back(std::move(value));
      } else if (s[i] == close && i + 1 < s.size() && s[i + 1] == '}') {
        f.add(s.substr(i, 2));
        i += 2;
        break;
      } else {
        f.add(s.substr(i, 1));
        ++i;
      }
    }
  }
  out.fingerprint = f.h;
  return out;
}

}  // namespace ls::tok
