#pragma once
// Python's str methods on UTF-8 text, as chat templates call them: positions, lengths and slices count
// code points; "whitespace" is Python's (py_str.h). Case mappings are utf8proc's one-to-one mappings
// (Python's few one-to-many mappings, 'ß'.upper() == 'SS', are not reproduced).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

// Invalid bytes decode as U+FFFD.
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
size_t code_point_count(std::string_view s);
bool is_printable(char32_t c);  // str.isprintable() of one character

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()

// strip / lstrip / rstrip: `chars` absent strips whitespace, else any of its characters.
enum class StripSide { both, left, right };
std::string py_strip_chars(std::string_view s, const std::optional<std::string>& chars, StripSide side);

// str.split(sep, maxsplit) and str.rsplit: sep absent splits on runs of whitespace; maxsplit < 0 is no limit.
// An empty sep fails (ValueError: empty separator).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
int64_t py_find(std::string_view s, std::string_view sub, bool from_right);  // code point index, or -1
int64_t py_count(std::string_view s, std::string_view sub);

// "%s and %d" % args: the printf-style formatting of Python's str % operator. A tuple gives the
// arguments in order, a dict feeds %(name)s, anything else is the one argument.
std::string percent_format(std::string_view format, const Value& args);

// Python's str.isdigit(), isalpha(), ... on the whole string (false for "").
enum class CharClass { digit, alpha, alnum, space, lower, upper };
bool py_is(std::string_view s, CharClass what);

}  // namespace ls::tok::jinja
