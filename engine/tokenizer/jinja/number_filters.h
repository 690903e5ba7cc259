#pragma once
// jinja2's number filters (filters.py: do_int, do_float, do_round, abs), with Python's int() and float()
// parsing of strings (underscores between digits, 0x/0o/0b prefixes, inf and nan). The filter table is
// in filters.cpp.
#include <optional>
#include <vector>

#include "tokenizer/jinja/object.h"

namespace ls::tok::jinja {

// A filter's parameters after the value, by position, absent where the template gave none.
using FilterParams = std::vector<std::optional<Value>>;

Value do_int(const Value& v, const FilterParams& p);    // int(default=0, base=10)
Value do_float(const Value& v, const FilterParams& p);  // float(default=0.0)
Value do_round(const Value& v, const FilterParams& p);  // round(precision=0, method='common')
Value do_abs(const Value& v);

}  // namespace ls::tok::jinja
