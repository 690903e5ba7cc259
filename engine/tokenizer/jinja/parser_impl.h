#pragma once
// The jinja parser's state and its small helpers (tokenizer/jinja/parser.h says what it parses): the
// statements are parsed in parser.cpp, the expressions in parser_expressions.cpp.
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja::detail {

std::string describe(const Token& t);  // a token as jinja2's messages name it

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

  // ---- statements (parser.cpp) ----

  bool at_end_tag(std::initializer_list<std::string_view> end_tags) const;
  Body subparse(std::initializer_list<std::string_view> end_tags);
  Body parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_end_tag);
  StmtPtr parse_statement();
  StmtPtr parse_for();
  StmtPtr parse_if();
  StmtPtr parse_set();
  void parse_signature(Stmt& s);
  StmtPtr parse_macro();
  StmtPtr parse_call_block();
  StmtPtr parse_filter_block();
  StmtPtr parse_with();
  StmtPtr parse_print();
  StmtPtr parse_generation();
  Target parse_assign_target(bool with_tuple, bool with_namespace, std::string_view extra_end);

  // ---- expressions (parser_expressions.cpp) ----

  bool tuple_end(std::string_view extra_end) const;
  ExprPtr parse_tuple(bool with_condexpr, std::string_view extra_end = {}, bool explicit_parentheses = false);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr binary(ExprKind kind, const Token& at, ExprPtr left, ExprPtr right);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr arith(const Token& at, ArithOp op, ExprPtr left, ExprPtr right);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  void note_name_use(const std::string& name);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  CallArgs parse_call_args();
  static void place_at(Expr& e, const Expr& start);
  ExprPtr parse_call(ExprPtr node);
  std::string dotted_name();
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
};

}  // namespace ls::tok::jinja::detail
