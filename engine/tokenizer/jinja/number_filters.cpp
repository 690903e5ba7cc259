#include "tokenizer/jinja/number_filters.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/py_str.h"

namespace ls::tok::jinja {

namespace {

std::string without_space_and_underscores(std::string_view s, bool& ok) {
  const std::string t = py_strip(s);
  std::string out;
  ok = !t.empty();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '_') {
      out += t[i];
      continue;
    }
    const bool between = i > 0 && i + 1 < t.size() && std::isxdigit(static_cast<unsigned char>(t[i - 1])) &&
                         std::isxdigit(static_cast<unsigned char>(t[i + 1]));
    if (!between) ok = false;
  }
  return out;
}

std::optional<int64_t> python_int(std::string_view s, int base) {
  bool ok = false;
  std::string t = without_space_and_underscores(s, ok);
  if (!ok) return std::nullopt;
  size_t i = 0;
  const bool negative = t[0] == '-';
  if (t[0] == '+' || t[0] == '-') ++i;
  if (i + 1 < t.size() && t[i] == '0') {
    const char p = char(t[i + 1] | 0x20);
    const int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base && (base == prefix_base || base == 0)) {
      base = prefix_base;
      i += 2;
    }
  }
  if (base == 0) base = 10;
  if (i >= t.size()) return std::nullopt;
  int64_t v = 0;
  for (; i < t.size(); ++i) {
    const char c = char(std::tolower(static_cast<unsigned char>(t[i])));
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(v, int64_t(base), &v) || __builtin_add_overflow(v, int64_t(d), &v))
      fail(ErrorKind::arithmetic, "integer does not fit in 64 bits");
  }
  return negative ? -v : v;
}

std::optional<double> python_float(std::string_view s) {
  bool ok = false;
  const std::string t = without_space_and_underscores(s, ok);
  if (!ok) return std::nullopt;
  std::string lower = py_lower(t);
  std::string_view body = lower;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == "inf" || body == "infinity" || body == "nan") return std::strtod(lower.c_str(), nullptr);
  // digits [. digits] [e [sign] digits], with at least one digit before the exponent
  size_t i = 0, digits = 0;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  }
  if (!digits) return std::nullopt;
  if (i < body.size() && body[i] == 'e') {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    const size_t e = i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i;
    if (i == e) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  return std::strtod(t.c_str(), nullptr);
}

int64_t truncate_float(double d) {
  if (std::isnan(d)) fail(ErrorKind::value, "cannot convert float NaN to integer");
  if (std::isinf(d) || std::fabs(d) >= 9.2e18) fail(ErrorKind::arithmetic, "cannot convert float infinity to integer");
  return int64_t(d);
}

// int(value), or nullopt where Python raises TypeError or ValueError.
std::optional<int64_t> to_int(const Value& v, int base) {
  require_defined(v);
  if (v.is_string()) return python_int(v.as_string(), base);
  if (v.is_float()) return truncate_float(v.as_float());
  if (v.is_number()) return v.as_int();
  return std::nullopt;
}

// float(value), or nullopt where Python raises TypeError or ValueError.
std::optional<double> to_float(const Value& v) {
  require_defined(v);
  if (v.is_string()) return python_float(v.as_string());
  if (v.is_number()) return v.as_float();
  return std::nullopt;
}

double round_half_even(double x, int64_t digits) {
  if (std::isnan(x) || std::isinf(x)) return x;
  if (digits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", int(std::min<int64_t>(digits, 300)), x);  // correctly rounded, ties to even
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, double(-digits));
  return std::nearbyint(x / scale) * scale;
}

}  // namespace

Value do_int(const Value& v, const FilterParams& p) {
  const int64_t base = p[1] ? p[1]->as_int() : 10;
  if (auto i = to_int(v, int(base))) return Value(*i);
  if (auto f = to_float(v)) return Value(truncate_float(*f));
  return p[0] ? *p[0] : Value(int64_t(0));
}

Value do_float(const Value& v, const FilterParams& p) {
  if (auto f = to_float(v)) return Value(*f);
  return p[0] ? *p[0] : Value(0.0);
}

Value do_round(const Value& v, const FilterParams& p) {
  const int64_t precision = p[0] ? p[0]->as_int() : 0;
  const std::string method = p[1] ? py_str(*p[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    fail(ErrorKind::value, "method must be common, ceil or floor");
  require_defined(v);
  if (!v.is_number()) fail(ErrorKind::type, "type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float() && precision >= 0) return Value(v.as_int());
    return Value(round_half_even(v.as_float(), precision));
  }
  const double scale = std::pow(10.0, double(precision));
  const double r = method == "ceil" ? std::ceil(v.as_float() * scale) : std::floor(v.as_float() * scale);
  return Value(r / scale);
}

Value do_abs(const Value& v) {
  require_defined(v);
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  fail(ErrorKind::type, "bad operand type for abs(): '" + v.type_name() + "'");
}

}  // namespace ls::tok::jinja
