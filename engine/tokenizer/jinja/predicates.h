#pragma once
// jinja2's tests, the `x is name(args)` of templates (tests.py): defined, undefined, none, boolean,
// true, false, integer, float, number, string, mapping, iterable, sequence, callable, sameas, escaped,
// in, lower, upper, odd, even, divisibleby, the comparisons (==, eq, equalto, !=, ne, >, gt,
// greaterthan, >=, ge, <, lt, lessthan, <=, le), filter and test.
#include <string_view>

#include "tokenizer/jinja/object.h"

namespace ls::tok::jinja {

bool is_test(std::string_view name);
// Fails (TemplateRuntimeError) for an unknown name; the parser refuses those before.
bool apply_test(std::string_view name, const Value& value, const Arguments& args);

}  // namespace ls::tok::jinja
