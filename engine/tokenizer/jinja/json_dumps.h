#pragma once
// Python's json.dumps, which transformers installs as the templates' `tojson` filter
// (tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)): separators ", " and
// ": " (or "," and ": " with an indent), floats as repr() prints them, NaN and Infinity as Python
// writes them, dict keys that are numbers, booleans or None turned into strings, tuples as arrays.
// Anything else (Undefined, an iterator, a function) fails as "Object of type X is not JSON serializable".
#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // the text of one level; nullopt: all on one line
  std::string item_separator = ", ", key_separator = ": ";
  bool sort_keys = false;
};

std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace ls::tok::jinja
