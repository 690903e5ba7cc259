#pragma once
// jinja2's filters (filters.py), with transformers' tojson (json.dumps, non-ASCII kept) in place of
// jinja2's HTML-safe one. Filters that return generators in jinja2 (select, reject, selectattr,
// rejectattr, map, items, unique, batch, slice, reverse of a list) return iterators here too, so that
// templates see the same truth and len() behaviour. Filters jinja2 has but chat templates have no use
// for (filesizeformat, pprint, random, striptags, truncate, urlencode, urlize, wordwrap, xmlattr,
// groupby) are known names that fail as unsupported when applied.
#include <string_view>

#include "tokenizer/jinja/object.h"

namespace ls::tok::jinja {

bool is_filter(std::string_view name);
Value apply_filter(std::string_view name, const Value& value, const Arguments& args);

}  // namespace ls::tok::jinja
