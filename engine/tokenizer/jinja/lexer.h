#pragma once
// The lexer of jinja2 (lexer.py) with the settings transformers uses: trim_blocks and lstrip_blocks on,
// keep_trailing_newline off. Newlines (\r\n, \r) become \n and one trailing newline is dropped; text
// outside tags is data; {{ }} and {% %} are split into names, numbers, string literals (unescaped as
// Python's unicode-escape codec does) and operators; {# #} comments and the tags of {% raw %} vanish.
// Whitespace control as jinja2 applies it:
//   {%- / {{- / {#-   strip all whitespace before the tag (newlines included)
//   -%} / -}} / -#}   strip all whitespace after it
//   %} / #}           trim_blocks: drop the one newline right after a block or comment tag
//   {% / {#           lstrip_blocks: drop spaces and tabs between the line's start and the tag
//   {%+ / %}+         turn lstrip_blocks / trim_blocks off for that tag
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok::jinja {

enum class TokenType {
  data,
  variable_begin,
  variable_end,
  block_begin,
  block_end,
  name,
  string,
  integer,
  floating,
  op,
  eof
};

struct Token {
  TokenType type;
  std::string text;  // data, name, operator, or a string literal's value
  int64_t integer = 0;
  double floating = 0;
  int line = 1, column = 1;  // where the token starts (columns count code points from 1)
};

// Throws TemplateError (syntax) naming `template_name`, the line and the column.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name);

// The value of a string literal's body (between the quotes) as Python's unicode-escape codec reads it:
// \n \t \\ \' \" \xhh \uXXXX \UXXXXXXXX \ooo, unknown escapes kept as written. False, with `error` set,
// for what Python refuses (a truncated \x escape, a backslash at the end, \N{...}).
bool unescape_string_literal(std::string_view body, std::string& value, std::string& error);

}  // namespace ls::tok::jinja
