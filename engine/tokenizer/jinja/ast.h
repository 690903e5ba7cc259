#pragma once
// The syntax tree of a template, as jinja2's parser builds it (nodes.py), for the renderer to walk.
// Every node keeps the line and column of its first token for error messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

struct Node {
  int line = 1, column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// f(positional..., name=keyword..., *dyn_args, **dyn_kwargs)
struct CallArgs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr dyn_args, dyn_kwargs;
};

enum class ExprKind {
  constant,   // value
  name,       // name
  list,       // items
  tuple,      // items
  dict,       // items (key, value pairs: items[2k], items[2k + 1])
  attribute,  // object.name
  item,       // object[index]
  slice,      // [start:stop:step] as an index; items: start, stop, step (null when absent)
  call,       // object(args)
  filter,     // object|name(args); object null in a filter block: the block's output
  test,       // object is name(args)
  negate,     // -object
  positive,   // +object
  not_,       // not object
  arith,      // items[0] arith_op items[1]
  and_,       // items[0] and items[1]
  or_,        // items[0] or items[1]
  concat,     // items[0] ~ items[1] ~ ...
  compare,    // items[0] compare_ops[0] items[1] compare_ops[1] items[2] ...
  condition,  // items[1] if items[0] else items[2] (items[2] null without else)
};

enum class CompareKind { eq, ne, lt, le, gt, ge, in, not_in };

struct Expr : Node {
  ExprKind kind;
  Value value;       // constant
  std::string name;  // name, attribute, filter, test
  ExprPtr object;    // attribute, item, call, filter, test, negate, positive, not_
  std::vector<ExprPtr> items;
  CallArgs args;  // call, filter, test
  ArithOp arith_op = ArithOp::add;
  std::vector<CompareKind> compare_ops;
  explicit Expr(ExprKind k) : kind(k) {}
};

// An assignment target: a name, a tuple of targets to unpack into, or `ns.attr`.
struct Target : Node {
  enum class Kind { name, tuple, namespace_attribute } kind = Kind::name;
  std::string name;  // the name, or the namespace variable
  std::string attribute;
  std::vector<Target> items;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  text,          // text: template data
  output,        // expr: {{ expr }} or {% print expr %}
  if_,           // expr: test; body; else_body (an elif is an if alone in else_body)
  for_,          // target in expr [if filter]; body; else_body; recursive
  set,           // target = expr
  set_block,     // {% set target | filter %}body{% endset %}; filter may be null
  macro,         // name(params) body
  call_block,    // {% call(params) expr %}body{% endcall %}
  filter_block,  // {% filter filter %}body{% endfilter %}
  with,          // {% with targets = values %}body{% endwith %}
  break_,
  continue_,
  generation,  // transformers' {% generation %}body{% endgeneration %}: renders its body
};

struct Parameter {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt : Node {
  StmtKind kind;
  std::string text;             // text; macro name
  ExprPtr expr;                 // output, if, for (the iterable), set, call_block (the call)
  ExprPtr filter;               // for: the `if` condition; set_block, filter_block: the filter chain
  Target target;                // for, set, set_block
  std::vector<Target> targets;  // with
  std::vector<ExprPtr> values;  // with
  Body body, else_body;
  bool recursive = false;
  // macro, call_block: the parameters, and whether the body reads varargs, kwargs or caller
  std::vector<Parameter> params;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
  explicit Stmt(StmtKind k) : kind(k) {}
};

}  // namespace ls::tok::jinja
