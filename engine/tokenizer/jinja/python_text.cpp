#include "tokenizer/jinja/python_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdio>

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/py_str.h"
#include "tokenizer/utf8.h"

namespace ls::tok::jinja {

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    const auto n =
        utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
    if (n <= 0) {
      out += U'\uFFFD';
      ++i;
    } else {
      out += char32_t(cp);
      i += size_t(n);
    }
  }
  return out;
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

size_t code_point_count(std::string_view s) {
  return size_t(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

namespace {

utf8proc_category_t category(char32_t c) {
  return c > 0x10FFFF ? UTF8PROC_CATEGORY_CN : utf8proc_category(utf8proc_int32_t(c));
}

bool is_cased(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

char32_t upper(char32_t c) { return char32_t(utf8proc_toupper(utf8proc_int32_t(c))); }
char32_t lower(char32_t c) { return char32_t(utf8proc_tolower(utf8proc_int32_t(c))); }
char32_t title(char32_t c) { return char32_t(utf8proc_totitle(utf8proc_int32_t(c))); }

template <class F>
std::string map_chars(std::string_view s, F f) {
  std::u32string u = decode_utf8(s);
  for (char32_t& c : u) c = f(c);
  return encode_utf8(u);
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

std::string py_upper(std::string_view s) { return map_chars(s, upper); }
std::string py_lower(std::string_view s) { return map_chars(s, lower); }

std::string py_title(std::string_view s) {
  bool previous_cased = false;
  return map_chars(s, [&](char32_t c) {
    const char32_t r = previous_cased ? lower(c) : title(c);
    previous_cased = is_cased(c);
    return r;
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_chars(s, [&](char32_t c) {
    const char32_t r = first ? title(c) : lower(c);
    first = false;
    return r;
  });
}

std::string py_strip_chars(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  if (!chars) {
    switch (side) {
      case StripSide::both: return py_strip(s);
      case StripSide::left: return py_lstrip(s);
      case StripSide::right: return py_rstrip(s);
    }
  }
  const std::u32string set = decode_utf8(*chars), text = decode_utf8(s);
  auto in_set = [&](char32_t c) { return set.find(c) != std::u32string::npos; };
  size_t b = 0, e = text.size();
  if (side != StripSide::right)
    while (b < e && in_set(text[b])) ++b;
  if (side != StripSide::left)
    while (e > b && in_set(text[e - 1])) --e;
  return encode_utf8(std::u32string_view(text).substr(b, e - b));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  std::u32string u = decode_utf8(s);
  if (from_right) std::reverse(u.begin(), u.end());
  std::vector<std::u32string> parts;
  size_t i = 0;
  while (i < u.size()) {
    while (i < u.size() && py_isspace(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
      size_t e = u.size();
      while (e > i && py_isspace(u[e - 1])) --e;
      parts.push_back(u.substr(i, e - i));
      break;
    }
    size_t j = i;
    while (j < u.size() && !py_isspace(u[j])) ++j;
    parts.push_back(u.substr(i, j - i));
    i = j;
  }
  std::vector<std::string> out;
  for (auto& p : parts) {
    if (from_right) std::reverse(p.begin(), p.end());
    out.push_back(encode_utf8(p));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right) {
  if (!sep) return split_whitespace(s, maxsplit, from_right);
  if (sep->empty()) fail(ErrorKind::value, "empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
      const size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  size_t end = s.size();
  while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
    if (end < sep->size()) break;
    const size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  const std::u32string u = decode_utf8(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < u.size()) {
    if (!is_line_break(u[i])) {
      ++i;
      continue;
    }
    size_t eol = i + 1;
    if (u[i] == '\r' && eol < u.size() && u[eol] == '\n') ++eol;
    out.push_back(encode_utf8(std::u32string_view(u).substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < u.size()) out.push_back(encode_utf8(std::u32string_view(u).substr(start)));
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  if (old.empty()) {  // inserted before every character and at the end
    const std::u32string u = decode_utf8(s);
    int64_t done = 0;
    for (char32_t c : u) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += replacement;
    start = at + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool from_right) {
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return int64_t(code_point_count(s.substr(0, at)));
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return int64_t(code_point_count(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

bool py_is(std::string_view s, CharClass what) {
  if (s.empty()) return false;
  bool any_cased = false;
  for (char32_t c : decode_utf8(s)) {
    const auto k = category(c);
    const bool alpha = k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
                       k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
    const bool digit = k == UTF8PROC_CATEGORY_ND;
    const bool numeric = digit || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
    switch (what) {
      case CharClass::digit:
        if (!digit) return false;
        break;
      case CharClass::alpha:
        if (!alpha) return false;
        break;
      case CharClass::alnum:
        if (!alpha && !numeric) return false;
        break;
      case CharClass::space:
        if (!py_isspace(c)) return false;
        break;
      case CharClass::lower:
      case CharClass::upper:
        if (k == (what == CharClass::lower ? UTF8PROC_CATEGORY_LU : UTF8PROC_CATEGORY_LL) || k == UTF8PROC_CATEGORY_LT)
          return false;
        any_cased = any_cased || is_cased(c);
        break;
    }
  }
  return what == CharClass::lower || what == CharClass::upper ? any_cased : true;
}

namespace {

// One %-conversion of percent_format: flags, width, precision and the conversion character.
struct Spec {
  std::string flags;
  int width = -1, precision = -1;
  char conversion = 's';
};

std::string pad(std::string s, const Spec& spec, bool numeric) {
  const int64_t n = int64_t(code_point_count(s));
  if (spec.width < 0 || n >= spec.width) return s;
  const size_t fill = size_t(spec.width - n);
  if (spec.flags.find('-') != std::string::npos) return s + std::string(fill, ' ');
  if (numeric && spec.flags.find('0') != std::string::npos) {
    const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ') ? 1 : 0;
    return s.substr(0, sign) + std::string(fill, '0') + s.substr(sign);
  }
  return std::string(fill, ' ') + s;
}

std::string format_one(const Spec& spec, const Value& v) {
  const char c = spec.conversion;
  if (c == 's' || c == 'r' || c == 'a') {
    std::string s = c == 's' ? py_str(v) : py_repr(v);
    if (spec.precision >= 0) s = encode_utf8(decode_utf8(s).substr(0, size_t(spec.precision)));
    return pad(s, spec, false);
  }
  if (c == 'c') {
    if (v.is_string()) return pad(v.as_string(), spec, false);
    std::string s;
    append_utf8(s, char32_t(v.as_int()));
    return pad(s, spec, false);
  }
  require_defined(v);
  if (!v.is_number())
    fail(ErrorKind::type, std::string("%") + c + " format: a real number is required, not " + v.type_name());
  std::string flags;
  for (char f : spec.flags)
    if (f == '+' || f == ' ' || f == '#') flags += f;
  char buf[512];
  if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o') {
    const int64_t i = v.is_float() ? int64_t(v.as_float()) : v.as_int();
    const std::string fmt = "%" + flags + "ll" + (c == 'i' || c == 'u' ? 'd' : c);
    std::snprintf(buf, sizeof buf, fmt.c_str(), static_cast<long long>(i));
    return pad(buf, spec, true);
  }
  const std::string fmt = "%" + flags + "." + std::to_string(spec.precision < 0 ? 6 : spec.precision) + c;
  std::snprintf(buf, sizeof buf, fmt.c_str(), v.as_float());
  return pad(buf, spec, true);
}

}  // namespace

std::string percent_format(std::string_view format, const Value& args) {
  const bool is_tuple = args.is_list() && args.sequence_style() == Sequence::tuple;
  const List single{args};
  const List& positional = is_tuple ? args.as_list() : single;
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) fail(ErrorKind::value, "incomplete format");
    if (format[i] == '%') {
      out += '%';
      continue;
    }
    const Value* arg = nullptr;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string_view::npos) fail(ErrorKind::value, "incomplete format key");
      if (!args.is_dict()) fail(ErrorKind::type, "format requires a mapping");
      arg = args.as_dict().find(format.substr(i + 1, close - i - 1));
      if (!arg) fail(ErrorKind::lookup, string_repr(format.substr(i + 1, close - i - 1)));
      used_mapping = true;
      i = close + 1;
    }
    Spec spec;
    while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos)
      spec.flags += format[i++];
    auto number = [&]() {
      int n = 0;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') n = n * 10 + (format[i++] - '0');
      return n;
    };
    if (i < format.size() && format[i] >= '0' && format[i] <= '9') spec.width = number();
    if (i < format.size() && format[i] == '.') {
      ++i;
      spec.precision = number();
    }
    if (i >= format.size()) fail(ErrorKind::value, "incomplete format");
    spec.conversion = format[i];
    if (std::string_view("sradiuxXoeEfFgGc").find(spec.conversion) == std::string_view::npos)
      fail(ErrorKind::value, std::string("unsupported format character '") + spec.conversion + "'");
    if (!arg) {
      if (next >= positional.size()) fail(ErrorKind::type, "not enough arguments for format string");
      arg = &positional[next++];
    }
    out += format_one(spec, *arg);
  }
  if (!used_mapping && next < positional.size() && !args.is_dict())
    fail(ErrorKind::type, "not all arguments converted during string formatting");
  return out;
}

}  // namespace ls::tok::jinja
