// The jinja parser's expressions (tokenizer/jinja/parser.h gives jinja2's precedence, lowest first).
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/parser_impl.h"
#include "tokenizer/jinja/predicates.h"

namespace ls::tok::jinja::detail {

bool Parser::tuple_end(std::string_view extra_end) const {
  const Token& t = current();
  if (t.type == TokenType::variable_end || t.type == TokenType::block_end || is(t, TokenType::op, ")")) return true;
  return !extra_end.empty() && is(t, TokenType::name, extra_end);
}

// Expressions separated by commas make a tuple; a single one is itself.
ExprPtr Parser::parse_tuple(bool with_condexpr, std::string_view extra_end, bool explicit_parentheses) {
  const Token& start = current();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (tuple_end(extra_end)) break;
    items.push_back(parse_expression(with_condexpr));
    if (is_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) fail("Expected an expression, got '" + describe(current()) + "'");
  }
  auto e = make(ExprKind::tuple, start);
  e->items = std::move(items);
  return e;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  Nested nested(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  Nested nested(*this);
  const Token& start = current();
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    auto e = make(ExprKind::condition, start);
    e->items.push_back(parse_or());
    e->items.push_back(std::move(expr));
    e->items.push_back(skip_name("else") ? parse_condexpr() : nullptr);
    expr = std::move(e);
  }
  return expr;
}

ExprPtr Parser::binary(ExprKind kind, const Token& at, ExprPtr left, ExprPtr right) {
  auto e = make(kind, at);
  e->items.push_back(std::move(left));
  e->items.push_back(std::move(right));
  return e;
}

ExprPtr Parser::parse_or() {
  const Token& start = current();
  ExprPtr left = parse_and();
  while (skip_name("or")) left = binary(ExprKind::or_, start, std::move(left), parse_and());
  return left;
}

ExprPtr Parser::parse_and() {
  const Token& start = current();
  ExprPtr left = parse_not();
  while (skip_name("and")) left = binary(ExprKind::and_, start, std::move(left), parse_not());
  return left;
}

ExprPtr Parser::parse_not() {
  Nested nested(*this);
  if (is_name("not")) {
    auto e = make(ExprKind::not_, next());
    e->object = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token& start = current();
  ExprPtr first = parse_math1();
  std::unique_ptr<Expr> cmp;
  while (true) {
    CompareKind op;
    const Token& t = current();
    if (is(t, TokenType::op, "=="))
      op = CompareKind::eq;
    else if (is(t, TokenType::op, "!="))
      op = CompareKind::ne;
    else if (is(t, TokenType::op, "<"))
      op = CompareKind::lt;
    else if (is(t, TokenType::op, "<="))
      op = CompareKind::le;
    else if (is(t, TokenType::op, ">"))
      op = CompareKind::gt;
    else if (is(t, TokenType::op, ">="))
      op = CompareKind::ge;
    else if (is(t, TokenType::name, "in"))
      op = CompareKind::in;
    else if (is(t, TokenType::name, "not") && is(look(), TokenType::name, "in"))
      op = CompareKind::not_in;
    else
      break;
    next();
    if (op == CompareKind::not_in) next();
    if (!cmp) {
      cmp = make(ExprKind::compare, start);
      cmp->items.push_back(std::move(first));
    }
    cmp->compare_ops.push_back(op);
    cmp->items.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::arith(const Token& at, ArithOp op, ExprPtr left, ExprPtr right) {
  auto e = binary(ExprKind::arith, at, std::move(left), std::move(right));
  e->arith_op = op;
  return e;
}

ExprPtr Parser::parse_math1() {
  const Token& start = current();
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const ArithOp op = next().text == "+" ? ArithOp::add : ArithOp::sub;
    left = arith(start, op, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const Token& start = current();
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(ExprKind::concat, start);
  e->items.push_back(std::move(first));
  while (skip_op("~")) e->items.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_math2() {
  const Token& start = current();
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const std::string& o = next().text;
    const ArithOp op = o == "*"    ? ArithOp::mul
                       : o == "/"  ? ArithOp::div
                       : o == "//" ? ArithOp::floordiv
                                   : ArithOp::mod;
    left = arith(start, op, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  const Token& start = current();
  ExprPtr left = parse_unary(true);
  while (skip_op("**")) left = arith(start, ArithOp::pow, std::move(left), parse_unary(true));
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Nested nested(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto e = make(current().text == "-" ? ExprKind::negate : ExprKind::positive, current());
    next();
    e->object = parse_unary(false);
    node = std::move(e);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

void Parser::note_name_use(const std::string& name) {
  for (Stmt* m : macros_) {
    if (name == "varargs") m->uses_varargs = true;
    if (name == "kwargs") m->uses_kwargs = true;
    if (name == "caller") m->uses_caller = true;
  }
}

ExprPtr Parser::parse_primary() {
  const Token& t = current();
  switch (t.type) {
    case TokenType::name: {
      next();
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        auto e = make(ExprKind::constant, t);
        e->value = Value(t.text == "true" || t.text == "True");
        return e;
      }
      if (t.text == "none" || t.text == "None") {
        auto e = make(ExprKind::constant, t);
        e->value = Value(nullptr);
        return e;
      }
      auto e = make(ExprKind::name, t);
      e->name = t.text;
      note_name_use(t.text);
      return e;
    }
    case TokenType::string: {
      std::string s;
      while (current().type == TokenType::string) s += next().text;  // adjacent literals join
      auto e = make(ExprKind::constant, t);
      e->value = Value(std::move(s));
      return e;
    }
    case TokenType::integer:
    case TokenType::floating: {
      next();
      auto e = make(ExprKind::constant, t);
      e->value = t.type == TokenType::integer ? Value(t.integer) : Value(t.floating);
      return e;
    }
    case TokenType::op:
      if (t.text == "(") {
        next();
        ExprPtr e = parse_tuple(true, {}, true);
        expect_op(")");
        return e;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      break;
    default: break;
  }
  if (t.type == TokenType::eof) fail("unexpected end of template");
  fail("unexpected '" + describe(t) + "'");
}

ExprPtr Parser::parse_list() {
  auto e = make(ExprKind::list, next());
  while (!is_op("]")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("]")) break;
    e->items.push_back(parse_expression(true));
  }
  expect_op("]");
  return e;
}

ExprPtr Parser::parse_dict() {
  auto e = make(ExprKind::dict, next());
  while (!is_op("}")) {
    if (!e->items.empty()) expect_op(",");
    if (is_op("}")) break;
    e->items.push_back(parse_expression(true));
    expect_op(":");
    e->items.push_back(parse_expression(true));
  }
  expect_op("}");
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& t = next();
  if (t.text == ".") {
    const Token& attr = next();
    if (attr.type == TokenType::name) {
      auto e = make(ExprKind::attribute, t);
      place_at(*e, *node);
      e->object = std::move(node);
      e->name = attr.text;
      return e;
    }
    if (attr.type != TokenType::integer) fail("expected name or number", &attr);
    auto e = make(ExprKind::item, t);
    place_at(*e, *node);
    e->object = std::move(node);
    auto index = make(ExprKind::constant, attr);
    index->value = Value(attr.integer);
    e->items.push_back(std::move(index));
    return e;
  }
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  auto e = make(ExprKind::item, t);
  place_at(*e, *node);
  e->object = std::move(node);
  if (args.size() == 1) {
    e->items.push_back(std::move(args[0]));
  } else {
    auto tuple = make(ExprKind::tuple, t);
    tuple->items = std::move(args);
    e->items.push_back(std::move(tuple));
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  const Token& start = current();
  ExprPtr first;
  if (!skip_op(":")) {
    first = parse_expression(true);
    if (!skip_op(":")) return first;
  }
  auto s = make(ExprKind::slice, start);
  s->items.push_back(std::move(first));
  s->items.push_back(is_op(":") || is_op("]") || is_op(",") ? nullptr : parse_expression(true));
  if (skip_op(":"))
    s->items.push_back(is_op("]") || is_op(",") ? nullptr : parse_expression(true));
  else
    s->items.push_back(nullptr);
  return s;
}

CallArgs Parser::parse_call_args() {
  const Token& open = expect_op("(");
  CallArgs args;
  bool require_comma = false;
  auto ensure = [&](bool ok) {
    if (!ok) fail("invalid syntax for function call expression", &open);
  };
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (skip_op("*")) {
      ensure(!args.dyn_args && !args.dyn_kwargs);
      args.dyn_args = parse_expression(true);
    } else if (skip_op("**")) {
      ensure(!args.dyn_kwargs);
      args.dyn_kwargs = parse_expression(true);
    } else if (current().type == TokenType::name && is(look(), TokenType::op, "=")) {
      ensure(!args.dyn_kwargs);
      std::string key = next().text;
      next();
      args.keywords.emplace_back(std::move(key), parse_expression(true));
    } else {
      ensure(!args.dyn_args && !args.dyn_kwargs && args.keywords.empty());
      args.positional.push_back(parse_expression(true));
    }
    require_comma = true;
  }
  expect_op(")");
  return args;
}

// Calls, attributes and subscripts are placed where their whole expression starts.
void Parser::place_at(Expr& e, const Expr& start) {
  e.line = start.line;
  e.column = start.column;
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make(ExprKind::call, current());
  e->args = parse_call_args();
  place_at(*e, *node);
  e->object = std::move(node);
  return e;
}

std::string Parser::dotted_name() {
  std::string name = expect_name().text;
  while (skip_op(".")) name += "." + expect_name().text;
  return name;
}

// `|name(args)|name2...`; `start_inline`: the first filter has no '|' (a filter block).
ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    const Token& at = current();
    auto e = make(ExprKind::filter, at);
    e->name = dotted_name();
    if (!is_filter(e->name)) fail("No filter named '" + e->name + "'.", &at);
    if (is_op("(")) e->args = parse_call_args();
    e->object = std::move(node);
    node = std::move(e);
    start_inline = false;
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const Token& is_token = next();
  const bool negated = skip_name("not");
  const Token& at = current();
  auto e = make(ExprKind::test, is_token);
  e->name = dotted_name();
  if (!is_test(e->name)) fail("No test named '" + e->name + "'.", &at);
  const Token& t = current();
  if (is_op("(")) {
    e->args = parse_call_args();
  } else if ((t.type == TokenType::name || t.type == TokenType::string || t.type == TokenType::integer ||
              t.type == TokenType::floating || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("You cannot chain multiple tests with is");
    e->args.positional.push_back(parse_postfix(parse_primary()));
  }
  e->object = std::move(node);
  if (!negated) return e;
  auto n = make(ExprKind::not_, is_token);
  n->object = std::move(e);
  return n;
}

}  // namespace ls::tok::jinja::detail
