#include "tokenizer/jinja/predicates.h"

#include <array>

#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

namespace {

constexpr std::array<std::string_view, 40> kTests = {
    "odd",     "even",   "divisibleby", "defined",  "undefined", "filter", "test",    "none",
    "boolean", "false",  "true",        "integer",  "float",     "lower",  "upper",   "string",
    "mapping", "number", "sequence",    "iterable", "callable",  "sameas", "escaped", "in",
    "==",      "eq",     "equalto",     "!=",       "ne",        ">",      "gt",      "greaterthan",
    ">=",      "ge",     "<",           "lt",       "lessthan",  "<=",     "le",      ""};

const Value& one_argument(std::string_view name, const Arguments& args) {
  if (args.positional.size() != 1 || !args.keywords.empty())
    fail(ErrorKind::type, "test '" + std::string(name) + "' takes one argument");
  return args.positional[0];
}

void no_arguments(std::string_view name, const Arguments& args) {
  if (!args.positional.empty() || !args.keywords.empty())
    fail(ErrorKind::type, "test '" + std::string(name) + "' takes no arguments");
}

bool is_mod_equal(const Value& v, int64_t divisor, int64_t remainder) {
  return py_equal(py_arith(ArithOp::mod, v, Value(divisor)), Value(remainder));
}

bool identical(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::none: return true;
    case Value::Kind::boolean: return a.as_bool() == b.as_bool();
    case Value::Kind::integer:
      return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;  // CPython's cache
    case Value::Kind::list: return &a.as_list() == &b.as_list();
    case Value::Kind::dict: return &a.as_dict() == &b.as_dict();
    case Value::Kind::iterator: return &a.as_iterator() == &b.as_iterator();
    case Value::Kind::object: return &a.as_object() == &b.as_object();
    default: return false;
  }
}

std::optional<CompareOp> ordering(std::string_view name) {
  if (name == ">" || name == "gt" || name == "greaterthan") return CompareOp::gt;
  if (name == ">=" || name == "ge") return CompareOp::ge;
  if (name == "<" || name == "lt" || name == "lessthan") return CompareOp::lt;
  if (name == "<=" || name == "le") return CompareOp::le;
  return std::nullopt;
}

}  // namespace

bool is_test(std::string_view name) {
  for (std::string_view t : kTests)
    if (!t.empty() && t == name) return true;
  return false;
}

bool apply_test(std::string_view name, const Value& v, const Arguments& args) {
  using K = Value::Kind;
  if (name == "==" || name == "eq" || name == "equalto") return py_equal(v, one_argument(name, args));
  if (name == "!=" || name == "ne") return !py_equal(v, one_argument(name, args));
  if (auto op = ordering(name)) return py_compare(*op, v, one_argument(name, args));
  if (name == "in") return py_contains(one_argument(name, args), v);
  if (name == "sameas") return identical(v, one_argument(name, args));
  if (name == "divisibleby") {
    const Value& n = one_argument(name, args);
    return py_equal(py_arith(ArithOp::mod, v, n), Value(int64_t(0)));
  }
  no_arguments(name, args);
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable")
    return v.kind() == K::undefined || v.is_string() || v.is_list() || v.is_dict() || v.is_iterator();
  if (name == "sequence")
    return v.kind() == K::undefined || v.is_string() || v.is_dict() ||
           (v.is_list() && v.sequence_style() <= Sequence::tuple);
  if (name == "callable") return v.kind() == K::undefined || (v.is_object() && v.as_object().callable());
  if (name == "escaped") return false;
  if (name == "odd") return is_mod_equal(v, 2, 1);
  if (name == "even") return is_mod_equal(v, 2, 0);
  if (name == "lower") return py_is(py_str(v), CharClass::lower);
  if (name == "upper") return py_is(py_str(v), CharClass::upper);
  if (name == "filter") return v.is_string() && is_filter(v.as_string());
  if (name == "test") return v.is_string() && is_test(v.as_string());
  fail(ErrorKind::runtime, "No test named '" + std::string(name) + "'.");
}

}  // namespace ls::tok::jinja
