#pragma once
// Runs a parsed template as the Python code jinja2 compiles it to would: statements append to the
// output, expressions compute values with Python's semantics (python_ops.h), names are looked up from
// the innermost scope out, then among the globals (globals.h), and are Undefined when found nowhere.
// Scopes follow jinja2's: each iteration of a for loop, a macro call, a call block's body, a block set,
// a filter block and a with block see the enclosing variables but keep their own assignments; if
// blocks do not open a scope. namespace() objects are how a template carries values out of a loop.
#include <string>

#include "tokenizer/jinja/ast.h"

namespace ls::tok::jinja {

// Throws TemplateError naming `template_name` and the line and column of the failing node.
std::string render_body(const Body& body, const Dict& variables, const std::string& template_name);

}  // namespace ls::tok::jinja
