#include "tokenizer/jinja/parser.h"

#include "tokenizer/jinja/parser_impl.h"

namespace ls::tok::jinja {

namespace detail {

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::data: return "template data";
    case TokenType::variable_begin: return "begin of print statement";
    case TokenType::variable_end: return "end of print statement";
    case TokenType::block_begin: return "begin of statement block";
    case TokenType::block_end: return "end of statement block";
    case TokenType::eof: return "end of template";
    case TokenType::string: return "string";
    default: return t.text;
  }
}

// ---- statements ----

bool Parser::at_end_tag(std::initializer_list<std::string_view> end_tags) const {
  for (auto tag : end_tags)
    if (is(current(), TokenType::name, tag)) return true;
  return false;
}

// Statements up to a block tag named in end_tags; the current token is then that tag's name.
Body Parser::subparse(std::initializer_list<std::string_view> end_tags) {
  Body body;
  while (current().type != TokenType::eof) {
    const Token& t = current();
    if (t.type == TokenType::data) {
      auto s = make_stmt(StmtKind::text, t);
      s->text = t.text;
      body.push_back(std::move(s));
      next();
    } else if (t.type == TokenType::variable_begin) {
      next();
      auto s = make_stmt(StmtKind::output, current());
      s->expr = parse_tuple(true);
      body.push_back(std::move(s));
      expect(TokenType::variable_end, {}, "'end of print statement'");
    } else if (t.type == TokenType::block_begin) {
      next();
      if (end_tags.size() && at_end_tag(end_tags)) return body;
      body.push_back(parse_statement());
      expect_block_end();
    } else {
      fail("unexpected " + describe(t));
    }
  }
  if (end_tags.size()) {
    std::string expected;
    for (auto tag : end_tags) expected += (expected.empty() ? "'" : " or '") + std::string(tag) + "'";
    fail("Unexpected end of template. Jinja was looking for the following tags: " + expected + "." +
         (tag_stack_.empty() ? "" : " The innermost block that needs to be closed is '" + tag_stack_.back() + "'."));
  }
  return body;
}

// Skips an optional ':' and the block end, parses a body up to one of end_tags.
Body Parser::parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_end_tag) {
  skip_op(":");
  expect_block_end();
  Body body = subparse(end_tags);
  if (drop_end_tag) next();
  return body;
}

StmtPtr Parser::parse_statement() {
  Nested nested(*this);
  const Token& t = current();
  if (t.type != TokenType::name) fail("tag name expected");
  const std::string& tag = t.text;
  tag_stack_.push_back(tag);
  StmtPtr s;
  if (tag == "for")
    s = parse_for();
  else if (tag == "if")
    s = parse_if();
  else if (tag == "set")
    s = parse_set();
  else if (tag == "macro")
    s = parse_macro();
  else if (tag == "call")
    s = parse_call_block();
  else if (tag == "filter")
    s = parse_filter_block();
  else if (tag == "with")
    s = parse_with();
  else if (tag == "print")
    s = parse_print();
  else if (tag == "generation")
    s = parse_generation();
  else if (tag == "break" || tag == "continue")
    s = make_stmt(tag == "break" ? StmtKind::break_ : StmtKind::continue_, next());
  else if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block")
    fail("'" + tag + "': a chat template cannot include, import or extend other templates or define blocks", &t,
         ErrorKind::unsupported);
  else
    fail("Encountered unknown tag '" + tag + "'.", &t);
  tag_stack_.pop_back();
  return s;
}

StmtPtr Parser::parse_for() {
  auto s = make_stmt(StmtKind::for_, next());
  s->target = parse_assign_target(true, false, "in");
  expect(TokenType::name, "in", "'in'");
  s->expr = parse_tuple(false, "recursive");
  if (skip_name("if")) s->filter = parse_expression(true);
  s->recursive = skip_name("recursive");
  s->body = parse_statements({"endfor", "else"}, false);
  if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
  return s;
}

StmtPtr Parser::parse_if() {
  auto s = make_stmt(StmtKind::if_, next());
  s->expr = parse_tuple(false);
  s->body = parse_statements({"elif", "else", "endif"}, false);
  const Token& t = next();
  if (t.text == "elif") {
    --pos_;  // parse the elif as an `if` in the else branch
    s->else_body.push_back(parse_if());
    return s;
  }
  if (t.text == "else") s->else_body = parse_statements({"endif"}, true);
  return s;
}

StmtPtr Parser::parse_set() {
  const Token& t = next();
  Target target = parse_assign_target(true, true, {});
  if (skip_op("=")) {
    auto s = make_stmt(StmtKind::set, t);
    s->target = std::move(target);
    s->expr = parse_tuple(true);
    return s;
  }
  auto s = make_stmt(StmtKind::set_block, t);
  s->target = std::move(target);
  if (is_op("|")) s->filter = parse_filter(nullptr, false);
  s->body = parse_statements({"endset"}, true);
  return s;
}

void Parser::parse_signature(Stmt& s) {
  expect_op("(");
  while (!is_op(")")) {
    if (!s.params.empty()) expect_op(",");
    Parameter p;
    p.name = expect_name().text;
    if (skip_op("="))
      p.default_value = parse_expression(true);
    else if (!s.params.empty() && s.params.back().default_value)
      fail("non-default argument follows default argument");
    s.params.push_back(std::move(p));
  }
  expect_op(")");
}

StmtPtr Parser::parse_macro() {
  auto s = make_stmt(StmtKind::macro, next());
  s->text = expect_name().text;
  parse_signature(*s);
  macros_.push_back(s.get());
  s->body = parse_statements({"endmacro"}, true);
  macros_.pop_back();
  return s;
}

StmtPtr Parser::parse_call_block() {
  auto s = make_stmt(StmtKind::call_block, next());
  if (is_op("(")) parse_signature(*s);
  const Token& at = current();
  s->expr = parse_expression(true);
  if (s->expr->kind != ExprKind::call) fail("expected call", &at);
  macros_.push_back(s.get());
  s->body = parse_statements({"endcall"}, true);
  macros_.pop_back();
  return s;
}

StmtPtr Parser::parse_filter_block() {
  auto s = make_stmt(StmtKind::filter_block, next());
  s->filter = parse_filter(nullptr, true);
  s->body = parse_statements({"endfilter"}, true);
  return s;
}

StmtPtr Parser::parse_with() {
  auto s = make_stmt(StmtKind::with, next());
  while (current().type != TokenType::block_end) {
    if (!s->targets.empty()) expect_op(",");
    s->targets.push_back(parse_assign_target(false, false, {}));
    expect_op("=");
    s->values.push_back(parse_expression(true));
  }
  s->body = parse_statements({"endwith"}, true);
  return s;
}

StmtPtr Parser::parse_print() {
  auto s = make_stmt(StmtKind::output, next());
  s->expr = parse_tuple(true);
  return s;
}

StmtPtr Parser::parse_generation() {
  auto s = make_stmt(StmtKind::generation, next());
  s->body = parse_statements({"endgeneration"}, true);
  return s;
}

// A name, `ns.attr` (with_namespace), or names separated by commas (with_tuple).
Target Parser::parse_assign_target(bool with_tuple, bool with_namespace, std::string_view extra_end) {
  Target target;
  place(target, current());
  if (with_namespace && look().type == TokenType::op && look().text == ".") {
    target.kind = Target::Kind::namespace_attribute;
    target.name = expect_name().text;
    next();
    target.attribute = expect_name().text;
    return target;
  }
  auto one = [&]() {
    Target t;
    place(t, current());
    if (skip_op("(")) {  // a parenthesised tuple
      t.kind = Target::Kind::tuple;
      while (!is_op(")")) {
        if (!t.items.empty()) expect_op(",");
        if (is_op(")")) break;
        t.items.push_back(parse_assign_target(false, false, {}));
      }
      expect_op(")");
      return t;
    }
    const Token& n = current();
    if (n.type != TokenType::name || n.text == "true" || n.text == "false" || n.text == "none" || n.text == "True" ||
        n.text == "False" || n.text == "None")
      fail("can't assign to '" + describe(n) + "'");
    t.name = next().text;
    return t;
  };
  if (!with_tuple) return one();
  target.kind = Target::Kind::tuple;
  bool is_tuple = false;
  while (true) {
    if (!target.items.empty()) expect_op(",");
    if (tuple_end(extra_end)) break;
    target.items.push_back(one());
    if (is_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (target.items.empty()) fail("Expected an expression, got '" + describe(current()) + "'");
    return std::move(target.items[0]);
  }
  return target;
}

}  // namespace detail

Body parse(const std::vector<Token>& tokens, const std::string& template_name) {
  return detail::Parser(tokens, template_name).parse_template();
}

}  // namespace ls::tok::jinja
