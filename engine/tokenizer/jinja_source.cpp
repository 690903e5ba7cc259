#include "tokenizer/jinja_source.h"

#include <algorithm>

#include "tokenizer/jinja/lexer.h"

namespace ls::tok {

namespace {

// Reads the literal whose opening quote is at s[i]; returns the index after its closing quote. The value
// is unescaped as the Jinja lexer does; a literal Python would refuse keeps its text as written.
size_t read_literal(std::string_view s, size_t i, std::string& value) {
  const char quote = s[i++];
  const size_t start = i;
  while (i < s.size() && s[i] != quote) i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
  const std::string_view body = s.substr(start, std::min(i, s.size()) - start);
  std::string error;
  if (!jinja::unescape_string_literal(body, value, error)) value = std::string(body);
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
