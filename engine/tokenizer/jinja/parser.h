#pragma once
// jinja2's parser (parser.py): tokens to statements and expressions, with its operator precedence
// (`if`-else < or < and < not < comparisons and `in` < + - < ~ < * / // % < ** < unary - + < filters,
// tests, calls, attributes, subscripts). Statements: for (with `if`, else, recursive), if/elif/else,
// set (also `ns.attr` and block set), macro, call, filter, with, break, continue, print, and
// transformers' generation block. Tags that reach other templates (include, import, from, extends,
// block) are refused, and so are unknown filters and tests, at parse time.
#include <string>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace ls::tok::jinja {

// Throws TemplateError (syntax or unsupported) naming `template_name`, the line and the column.
Body parse(const std::vector<Token>& tokens, const std::string& template_name);

}  // namespace ls::tok::jinja
