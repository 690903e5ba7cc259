#include "tokenizer/jinja/python_ops.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tokenizer/jinja/object.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/utf8.h"

namespace ls::tok::jinja {

void require_defined(const Value& v) {
  if (!v.is_undefined()) return;
  const auto& u = v.undefined_info();
  fail(u.security ? ErrorKind::security : ErrorKind::undefined, u.message());
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);  // shortest
  std::string_view s(buf, size_t(r.ptr - buf));
  std::string out;
  if (s.front() == '-') {
    out = "-";
    s.remove_prefix(1);
  }
  const size_t e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.') digits += c;
  const int exponent = std::atoi(std::string(s.substr(e + 1)).c_str());
  const int decpt = exponent + 1;  // value = 0.digits x 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0)
      out += "0." + std::string(size_t(-decpt), '0') + digits;
    else if (size_t(decpt) >= digits.size())
      out += digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int x = decpt - 1;
  out += x < 0 ? "e-" : "e+";
  if (std::abs(x) < 10) out += '0';
  out += std::to_string(std::abs(x));
  return out;
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos, has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  static constexpr char kHex[] = "0123456789abcdef";
  auto hex = [&](char32_t c, int digits) {
    for (int k = digits - 1; k >= 0; --k) out += kHex[(c >> (4 * k)) & 0xF];
  };
  for (char32_t c : decode_utf8(s)) {
    if (c == char32_t(quote) || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      hex(c, 2);
    } else if (c < 0x7F || is_printable(c)) {
      append_utf8(out, c);
    } else if (c <= 0xFF) {
      out += "\\x";
      hex(c, 2);
    } else if (c <= 0xFFFF) {
      out += "\\u";
      hex(c, 4);
    } else {
      out += "\\U";
      hex(c, 8);
    }
  }
  out += quote;
  return out;
}

namespace {

std::string join_reprs(const List& items, std::string_view open, std::string_view close, bool tuple) {
  std::string out(open);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(items[i]);
  }
  if (tuple && items.size() == 1) out += ",";
  out += close;
  return out;
}

std::string sequence_repr(const Value& v) {
  const List& items = v.as_list();
  switch (v.sequence_style()) {
    case Sequence::list: return join_reprs(items, "[", "]", false);
    case Sequence::tuple: return join_reprs(items, "(", ")", true);
    case Sequence::dict_items: return join_reprs(items, "dict_items([", "])", false);
    case Sequence::dict_keys: return join_reprs(items, "dict_keys([", "])", false);
    case Sequence::dict_values: return join_reprs(items, "dict_values([", "])", false);
  }
  return "";
}

std::string dict_repr(const Dict& d) {
  std::string out = "{";
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(d.items[i].first) + ": " + py_repr(d.items[i].second);
  }
  return out + "}";
}

}  // namespace

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return "";
    case Value::Kind::string: return v.as_string();
    default: return py_repr(v);
  }
}

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return v.as_bool() ? "True" : "False";
    case Value::Kind::integer: return std::to_string(v.as_int());
    case Value::Kind::floating: return float_repr(v.as_float());
    case Value::Kind::string: return string_repr(v.as_string());
    case Value::Kind::list: return sequence_repr(v);
    case Value::Kind::dict: return dict_repr(v.as_dict());
    case Value::Kind::iterator: return "<" + v.as_iterator().type_name + " object>";
    case Value::Kind::object: return v.as_object().repr();
  }
  return "";
}

bool py_truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.as_bool();
    case Value::Kind::integer: return v.as_int() != 0;
    case Value::Kind::floating: return v.as_float() != 0.0;
    case Value::Kind::string: return !v.as_string().empty();
    case Value::Kind::list: return !v.as_list().empty();
    case Value::Kind::dict: return !v.as_dict().items.empty();
    case Value::Kind::iterator:
    case Value::Kind::object: return true;
  }
  return true;
}

namespace {

bool same_sequence_kind(const Value& a, const Value& b) { return a.sequence_style() == b.sequence_style(); }

bool numbers_equal(const Value& a, const Value& b) {
  if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
  return a.as_int() == b.as_int();
}

}  // namespace

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.as_string() == b.as_string();
    case Value::Kind::list: {
      if (!same_sequence_kind(a, b)) return false;
      const List &x = a.as_list(), &y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!py_equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::dict: {
      const Dict &x = a.as_dict(), &y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::iterator: return &a.as_iterator() == &b.as_iterator();
    case Value::Kind::object: return &a.as_object() == &b.as_object();
    default: return false;
  }
}

namespace {

const char* op_symbol(CompareOp op) {
  switch (op) {
    case CompareOp::lt: return "<";
    case CompareOp::le: return "<=";
    case CompareOp::gt: return ">";
    case CompareOp::ge: return ">=";
  }
  return "<";
}

template <class T>
bool apply(CompareOp op, const T& a, const T& b) {
  switch (op) {
    case CompareOp::lt: return a < b;
    case CompareOp::le: return a <= b;
    case CompareOp::gt: return a > b;
    case CompareOp::ge: return a >= b;
  }
  return false;
}

}  // namespace

bool py_compare(CompareOp op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return apply(op, a.as_float(), b.as_float());
    return apply(op, a.as_int(), b.as_int());
  }
  if (a.is_string() && b.is_string()) return apply(op, a.as_string(), b.as_string());
  if (a.is_list() && b.is_list() && same_sequence_kind(a, b) && a.sequence_style() <= Sequence::tuple) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!py_equal(x[i], y[i])) return py_compare(op, x[i], y[i]);
    return apply(op, x.size(), y.size());
  }
  fail(ErrorKind::type, std::string("'") + op_symbol(op) + "' not supported between instances of '" + a.type_name() +
                            "' and '" + b.type_name() + "'");
}

bool py_less(const Value& a, const Value& b) { return py_compare(CompareOp::lt, a, b); }

namespace {

const char* op_symbol(ArithOp op) {
  switch (op) {
    case ArithOp::add: return "+";
    case ArithOp::sub: return "-";
    case ArithOp::mul: return "*";
    case ArithOp::div: return "/";
    case ArithOp::floordiv: return "//";
    case ArithOp::mod: return "%";
    case ArithOp::pow: return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported_operands(ArithOp op, const Value& a, const Value& b) {
  fail(ErrorKind::type, std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + a.type_name() +
                            "' and '" + b.type_name() + "'");
}

// An int64 operation that Python would carry past 64 bits fails instead.
template <class Op>
int64_t checked(Op op) {
  int64_t r = 0;
  if (op(r)) fail(ErrorKind::arithmetic, "integer result does not fit in 64 bits");
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1 && a == std::numeric_limits<int64_t>::min())
    fail(ErrorKind::arithmetic, "integer result does not fit in 64 bits");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Python's float_divmod: the remainder takes the divisor's sign.
std::pair<double, double> float_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

constexpr size_t kMaxRepeatedSize = size_t(1) << 28;  // str * int and list * int beyond this fail

Value repeat(const Value& seq, int64_t times) {
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  if (times > 0 && unit > 0 && uint64_t(times) > kMaxRepeatedSize / unit)
    fail(ErrorKind::arithmetic, "repeated sequence too large (over 2^28 elements)");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value(std::move(out), seq.sequence_style());
}

bool is_repeatable(const Value& v) { return v.is_string() || (v.is_list() && v.sequence_style() <= Sequence::tuple); }

Value arith_numbers(ArithOp op, const Value& a, const Value& b) {
  const bool floats = a.is_float() || b.is_float();
  if (op == ArithOp::div) {
    if (b.as_float() == 0.0) fail(ErrorKind::arithmetic, floats ? "float division by zero" : "division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (floats) {
    const double x = a.as_float(), y = b.as_float();
    switch (op) {
      case ArithOp::add: return Value(x + y);
      case ArithOp::sub: return Value(x - y);
      case ArithOp::mul: return Value(x * y);
      case ArithOp::floordiv:
      case ArithOp::mod:
        if (y == 0.0) fail(ErrorKind::arithmetic, op == ArithOp::mod ? "float modulo" : "float floor division by zero");
        return Value(op == ArithOp::mod ? float_divmod(x, y).second : float_divmod(x, y).first);
      case ArithOp::pow: return Value(std::pow(x, y));
      default: break;
    }
  }
  const int64_t x = a.as_int(), y = b.as_int();
  switch (op) {
    case ArithOp::add: return Value(checked([&](int64_t& r) { return __builtin_add_overflow(x, y, &r); }));
    case ArithOp::sub: return Value(checked([&](int64_t& r) { return __builtin_sub_overflow(x, y, &r); }));
    case ArithOp::mul: return Value(checked([&](int64_t& r) { return __builtin_mul_overflow(x, y, &r); }));
    case ArithOp::floordiv:
    case ArithOp::mod:
      if (y == 0) fail(ErrorKind::arithmetic, "integer division or modulo by zero");
      return Value(op == ArithOp::mod ? floor_mod(x, y) : floor_div(x, y));
    case ArithOp::pow: {
      if (y < 0) return Value(std::pow(double(x), double(y)));
      int64_t result = 1, base = x;  // by squaring: y can be large when x is 0, 1 or -1
      for (int64_t e = y; e > 0; e >>= 1) {
        if (e & 1) result = checked([&](int64_t& r) { return __builtin_mul_overflow(result, base, &r); });
        if (e > 1) base = checked([&](int64_t& r) { return __builtin_mul_overflow(base, base, &r); });
      }
      return Value(result);
    }
    default: break;
  }
  return Value();
}

}  // namespace

Value py_arith(ArithOp op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) return arith_numbers(op, a, b);
  if (op == ArithOp::add) {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && a.sequence_style() == b.sequence_style() &&
        a.sequence_style() <= Sequence::tuple) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out), a.sequence_style());
    }
    if (a.is_string() || (a.is_list() && a.sequence_style() <= Sequence::tuple))
      fail(ErrorKind::type,
           "can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
  }
  if (op == ArithOp::mul) {
    if (is_repeatable(a) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if (is_repeatable(b) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    if (is_repeatable(a) || is_repeatable(b))
      fail(ErrorKind::type,
           "can't multiply sequence by non-int of type '" + (is_repeatable(a) ? b.type_name() : a.type_name()) + "'");
  }
  if (op == ArithOp::mod && a.is_string()) return Value(percent_format(a.as_string(), b));
  unsupported_operands(op, a, b);
}

Value py_negate(const Value& v) {
  require_defined(v);
  if (v.is_float()) return Value(-v.as_float());
  if (v.is_number())
    return Value(checked([&](int64_t& r) { return __builtin_sub_overflow(int64_t(0), v.as_int(), &r); }));
  fail(ErrorKind::type, "bad operand type for unary -: '" + v.type_name() + "'");
}

Value py_positive(const Value& v) {
  require_defined(v);
  if (v.is_float()) return v;
  if (v.is_number()) return Value(v.as_int());
  fail(ErrorKind::type, "bad operand type for unary +: '" + v.type_name() + "'");
}

bool py_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::string:
      if (!item.is_string())
        fail(ErrorKind::type, "'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::dict: return container.as_dict().find(item) != nullptr;
    case Value::Kind::undefined:
    case Value::Kind::list:
    case Value::Kind::iterator:
      for (const Value& x : py_iterate(container))
        if (py_equal(x, item)) return true;
      return false;
    default: fail(ErrorKind::type, "argument of type '" + container.type_name() + "' is not iterable");
  }
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return 0;
    case Value::Kind::string: return int64_t(code_point_count(v.as_string()));
    case Value::Kind::list: return int64_t(v.as_list().size());
    case Value::Kind::dict: return int64_t(v.as_dict().items.size());
    default: fail(ErrorKind::type, "object of type '" + v.type_name() + "' has no len()");
  }
}

List py_iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined: return {};
    case Value::Kind::list: return v.as_list();
    case Value::Kind::dict: {
      List keys;
      for (const auto& kv : v.as_dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::string: {
      List chars;
      for (char32_t c : decode_utf8(v.as_string())) {
        std::string s;
        append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    case Value::Kind::iterator: {
      IteratorState& it = v.as_iterator();
      List rest(it.items.begin() + std::ptrdiff_t(it.position), it.items.end());
      it.position = it.items.size();
      return rest;
    }
    default: fail(ErrorKind::type, "'" + v.type_name() + "' object is not iterable");
  }
}

}  // namespace ls::tok::jinja
