#include "tokenizer/jinja/parser.h"

#include <initializer_list>
#include <string_view>

#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/predicates.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

namespace {

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

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name) : tokens_(tokens), name_(name) {}

  Body parse_template() {
    Body body = subparse({});
    if (current().type != TokenType::eof) fail("unexpected " + describe(current()));
    return body;
  }

 private:
  const std::vector<Token>& tokens_;
  const std::string& name_;
  size_t pos_ = 0;
  std::vector<Stmt*> macros_;  // the macro and call blocks being parsed, innermost last
  std::vector<std::string> tag_stack_;
  int nesting_ = 0;

  // Counts the parser's recursion (nested expressions and blocks): a template nested deeper than any
  // real one fails as a syntax error instead of exhausting the stack.
  static constexpr int kMaxNesting = 200;
  struct Nested {
    Parser& p;
    explicit Nested(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting)
        p.fail("too deeply nested (more than " + std::to_string(kMaxNesting) + " levels)");
    }
    ~Nested() { --p.nesting_; }
  };

  const Token& current() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }

  [[noreturn]] void fail(const std::string& message, const Token* at = nullptr,
                         ErrorKind kind = ErrorKind::syntax) const {
    const Token& t = at ? *at : current();
    throw TemplateError(kind, message, name_, t.line, t.column);
  }

  static bool is(const Token& t, TokenType type, std::string_view text = {}) {
    return t.type == type && (text.empty() || t.text == text);
  }
  bool is_name(std::string_view text) const { return is(current(), TokenType::name, text); }
  bool is_op(std::string_view text) const { return is(current(), TokenType::op, text); }
  bool skip_name(std::string_view text) {
    if (!is_name(text)) return false;
    next();
    return true;
  }
  bool skip_op(std::string_view text) {
    if (!is_op(text)) return false;
    next();
    return true;
  }
  const Token& expect(TokenType type, std::string_view text, const char* what) {
    if (!is(current(), type, text)) {
      if (current().type == TokenType::eof) fail("unexpected end of template, expected " + std::string(what) + ".");
      fail("expected token " + std::string(what) + ", got '" + describe(current()) + "'");
    }
    return next();
  }
  const Token& expect_op(std::string_view op) {
    return expect(TokenType::op, op, ("'" + std::string(op) + "'").c_str());
  }
  const Token& expect_name() { return expect(TokenType::name, {}, "'name'"); }
  void expect_block_end() { expect(TokenType::block_end, {}, "'end of statement block'"); }

  template <class T>
  static void place(T& node, const Token& t) {
    node.line = t.line;
    node.column = t.column;
  }
  static ExprPtr make(ExprKind kind, const Token& t) {
    auto e = std::make_unique<Expr>(kind);
    place(*e, t);
    return e;
  }
  static StmtPtr make_stmt(StmtKind kind, const Token& t) {
    auto s = std::make_unique<Stmt>(kind);
    place(*s, t);
    return s;
  }

  // ---- statements ----

  bool at_end_tag(std::initializer_list<std::string_view> end_tags) const {
    for (auto tag : end_tags)
      if (is(current(), TokenType::name, tag)) return true;
    return false;
  }

  // Statements up to a block tag named in end_tags; the current token is then that tag's name.
  Body subparse(std::initializer_list<std::string_view> end_tags) {
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
  Body parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_end_tag) {
    skip_op(":");
    expect_block_end();
    Body body = subparse(end_tags);
    if (drop_end_tag) next();
    return body;
  }

  StmtPtr parse_statement() {
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

  StmtPtr parse_for() {
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

  StmtPtr parse_if() {
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

  StmtPtr parse_set() {
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

  void parse_signature(Stmt& s) {
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

  StmtPtr parse_macro() {
    auto s = make_stmt(StmtKind::macro, next());
    s->text = expect_name().text;
    parse_signature(*s);
    macros_.push_back(s.get());
    s->body = parse_statements({"endmacro"}, true);
    macros_.pop_back();
    return s;
  }

  StmtPtr parse_call_block() {
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

  StmtPtr parse_filter_block() {
    auto s = make_stmt(StmtKind::filter_block, next());
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
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

  StmtPtr parse_print() {
    auto s = make_stmt(StmtKind::output, next());
    s->expr = parse_tuple(true);
    return s;
  }

  StmtPtr parse_generation() {
    auto s = make_stmt(StmtKind::generation, next());
    s->body = parse_statements({"endgeneration"}, true);
    return s;
  }

  // A name, `ns.attr` (with_namespace), or names separated by commas (with_tuple).
  Target parse_assign_target(bool with_tuple, bool with_namespace, std::string_view extra_end) {
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

  // ---- expressions ----

  bool tuple_end(std::string_view extra_end) const {
    const Token& t = current();
    if (t.type == TokenType::variable_end || t.type == TokenType::block_end || is(t, TokenType::op, ")")) return true;
    return !extra_end.empty() && is(t, TokenType::name, extra_end);
  }

  // Expressions separated by commas make a tuple; a single one is itself.
  ExprPtr parse_tuple(bool with_condexpr, std::string_view extra_end = {}, bool explicit_parentheses = false) {
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

  ExprPtr parse_expression(bool with_condexpr) {
    Nested nested(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
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

  ExprPtr binary(ExprKind kind, const Token& at, ExprPtr left, ExprPtr right) {
    auto e = make(kind, at);
    e->items.push_back(std::move(left));
    e->items.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    const Token& start = current();
    ExprPtr left = parse_and();
    while (skip_name("or")) left = binary(ExprKind::or_, start, std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    const Token& start = current();
    ExprPtr left = parse_not();
    while (skip_name("and")) left = binary(ExprKind::and_, start, std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    Nested nested(*this);
    if (is_name("not")) {
      auto e = make(ExprKind::not_, next());
      e->object = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr arith(const Token& at, ArithOp op, ExprPtr left, ExprPtr right) {
    auto e = binary(ExprKind::arith, at, std::move(left), std::move(right));
    e->arith_op = op;
    return e;
  }

  ExprPtr parse_math1() {
    const Token& start = current();
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const ArithOp op = next().text == "+" ? ArithOp::add : ArithOp::sub;
      left = arith(start, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& start = current();
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::concat, start);
    e->items.push_back(std::move(first));
    while (skip_op("~")) e->items.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
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

  ExprPtr parse_pow() {
    const Token& start = current();
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) left = arith(start, ArithOp::pow, std::move(left), parse_unary(true));
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  void note_name_use(const std::string& name) {
    for (Stmt* m : macros_) {
      if (name == "varargs") m->uses_varargs = true;
      if (name == "kwargs") m->uses_kwargs = true;
      if (name == "caller") m->uses_caller = true;
    }
  }

  ExprPtr parse_primary() {
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

  ExprPtr parse_list() {
    auto e = make(ExprKind::list, next());
    while (!is_op("]")) {
      if (!e->items.empty()) expect_op(",");
      if (is_op("]")) break;
      e->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_dict() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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

  ExprPtr parse_subscribed() {
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

  CallArgs parse_call_args() {
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
  static void place_at(Expr& e, const Expr& start) {
    e.line = start.line;
    e.column = start.column;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::call, current());
    e->args = parse_call_args();
    place_at(*e, *node);
    e->object = std::move(node);
    return e;
  }

  std::string dotted_name() {
    std::string name = expect_name().text;
    while (skip_op(".")) name += "." + expect_name().text;
    return name;
  }

  // `|name(args)|name2...`; `start_inline`: the first filter has no '|' (a filter block).
  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
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

  ExprPtr parse_test(ExprPtr node) {
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
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& template_name) {
  return Parser(tokens, template_name).parse_template();
}

}  // namespace ls::tok::jinja
