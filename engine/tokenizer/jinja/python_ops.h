#pragma once
// Python's semantics on template values, as the code jinja2 compiles a template to has them: str() and
// repr(), truth, ==, ordering, arithmetic (int / int is a float, // floors, % takes the divisor's sign,
// str * int repeats), `in`, len() and iteration. Undefined operands fail as jinja2's Undefined does;
// mismatched types fail with Python's TypeError messages. Failures are thrown as Failure.
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

std::string py_str(const Value& v);           // str(v): what {{ v }} prints
std::string py_repr(const Value& v);          // repr(v): how v prints inside a list or dict
std::string float_repr(double d);             // repr(float): "1.0", "0.1", "1e+16", "1e-05", "inf", "nan"
std::string string_repr(std::string_view s);  // repr(str): "'a'", "\"it's\"", "'\\n'"

bool py_truthy(const Value& v);
bool py_equal(const Value& a, const Value& b);

enum class CompareOp { lt, le, gt, ge };
bool py_compare(CompareOp op, const Value& a, const Value& b);
bool py_less(const Value& a, const Value& b);  // a < b, for sorting

enum class ArithOp { add, sub, mul, div, floordiv, mod, pow };
Value py_arith(ArithOp op, const Value& a, const Value& b);
Value py_negate(const Value& v);
Value py_positive(const Value& v);

bool py_contains(const Value& container, const Value& item);  // item in container
int64_t py_len(const Value& v);
List py_iterate(const Value& v);  // iter(v) to the end: list items, dict keys, a string's characters

// Fails as jinja2's Undefined does when `v` is undefined and is used for more than printing or testing.
void require_defined(const Value& v);

}  // namespace ls::tok::jinja
