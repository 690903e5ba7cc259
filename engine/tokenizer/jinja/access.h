#pragma once
// Attribute and item access as jinja2's ImmutableSandboxedEnvironment does it. `x.name` looks for a
// Python attribute first (str, dict and list methods, an object's attributes), then for the item
// x['name']; `x[key]` looks for the item first, then, for a string key, the attribute. What is found
// nowhere is Undefined, remembering what was asked of what for its message. Methods that would change
// a list or a dict (append, update, ...) are unsafe: using them is a SecurityError, as in jinja2.
#include <optional>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

Value get_attribute(const Value& object, std::string_view name);  // object.name
Value get_item(const Value& object, const Value& key);            // object[key]
// object[start:stop:step] of a string, list or tuple (absent bounds as in Python).
Value get_slice(const Value& object, const std::optional<Value>& start, const std::optional<Value>& stop,
                const std::optional<Value>& step);

}  // namespace ls::tok::jinja
