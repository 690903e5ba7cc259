#include "tokenizer/jinja/renderer.h"

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "tokenizer/jinja/access.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/globals.h"
#include "tokenizer/jinja/object.h"
#include "tokenizer/jinja/predicates.h"
#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

namespace {

constexpr int kMaxCallDepth = 400;  // macro calls and recursive loops nested deeper fail (Python: RecursionError)

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

// jinja2.runtime.LoopContext: loop.index, loop.first, loop.cycle(...), ... and loop(items) when the
// loop is recursive.
class Loop : public Object, public std::enable_shared_from_this<Loop> {
 public:
  using Recurse = std::function<std::string(const Value& items, int depth0)>;
  Loop(List items, int depth0, Recurse recurse)
      : items_(std::move(items)), depth0_(depth0), recurse_(std::move(recurse)) {}
  size_t index0 = 0;

  std::string type_name() const override { return "LoopContext"; }
  std::string object_type_repr() const override { return "jinja2.runtime.LoopContext object"; }
  std::string repr() const override {
    return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items_.size()) + ">";
  }
  bool callable() const override { return true; }
  Value call(const Arguments& a) override {
    if (!recurse_) fail(ErrorKind::type, "The loop must have the 'recursive' marker to be called recursively.");
    const auto p = bind_arguments(a, "loop", {"iterable"}, 1);
    return Value(recurse_(*p[0], depth0_ + 1));
  }

  std::optional<Value> attribute(std::string_view name) const override {
    const int64_t n = int64_t(items_.size()), i = int64_t(index0);
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i + 1 == n);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(int64_t(depth0_ + 1));
    if (name == "depth0") return Value(int64_t(depth0_));
    if (name == "previtem")
      return i > 0 ? items_[size_t(i - 1)] : Value::undefined(UndefinedInfo{.hint = "there is no previous item"});
    if (name == "nextitem")
      return i + 1 < n ? items_[size_t(i + 1)] : Value::undefined(UndefinedInfo{.hint = "there is no next item"});
    if (name == "cycle")
      return make_method("cycle", [self = shared_from_this()](const Arguments& a) {
        if (a.positional.empty()) fail(ErrorKind::type, "no items for cycling given");
        return a.positional[self->index0 % a.positional.size()];
      });
    if (name == "changed")
      return make_method("changed", [self = shared_from_this()](const Arguments& a) {
        Value now(a.positional, Sequence::tuple);
        if (self->last_changed_ && py_equal(*self->last_changed_, now)) return Value(false);
        self->last_changed_ = std::move(now);
        return Value(true);
      });
    return std::nullopt;
  }

 private:
  List items_;
  int depth0_;
  Recurse recurse_;
  mutable std::optional<Value> last_changed_;
};

class Renderer;

// A {% macro %} (or a call block's body, as `caller`): calling it renders its body to a string.
class Macro : public Object {
 public:
  Macro(Renderer& r, const Stmt& def, ScopePtr scope, std::string name)
      : renderer_(r), def_(def), scope_(std::move(scope)), name_(std::move(name)) {}
  std::string type_name() const override { return "Macro"; }
  std::string object_type_repr() const override { return "jinja2.runtime.Macro object"; }
  std::string repr() const override { return "<Macro '" + name_ + "'>"; }
  bool callable() const override { return true; }
  Value call(const Arguments& args) override;
  // Drops the defining scope, which holds the macro in turn: the renderer breaks that cycle when it ends.
  void release() { scope_.reset(); }

 private:
  Renderer& renderer_;
  const Stmt& def_;
  ScopePtr scope_;
  std::string name_;
};

enum class Flow { normal, break_loop, continue_loop };

class Renderer {
 public:
  explicit Renderer(const std::string& name) : name_(name) {}
  ~Renderer() {
    for (const auto& m : macros_) m->release();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& s : body) {
      const Flow f = exec(*s, scope, out);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Value call_macro(const Stmt& def, const ScopePtr& defining, const Arguments& args, const std::string& name);

 private:
  const std::string& name_;
  int depth_ = 0;
  // Every macro made, for ~Renderer: a macro keeps its defining scope (it may be called from outside it, e.g.
  // through a namespace), and that scope keeps the macro, so each would otherwise outlive the render.
  std::vector<std::shared_ptr<Macro>> macros_;

  Value make_macro(const Stmt& def, const ScopePtr& scope, const std::string& name) {
    macros_.push_back(std::make_shared<Macro>(*this, def, scope, name));
    return Value(macros_.back());
  }

  [[noreturn]] void rethrow(const Failure& f, const Node& at) const {
    throw TemplateError(f.kind, f.message, name_, at.line, at.column);
  }

  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
    try {
      return exec_statement(s, scope, out);
    } catch (const Failure& f) {
      rethrow(f, s);
    }
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    try {
      return eval_expression(e, scope);
    } catch (const Failure& f) {
      rethrow(f, e);
    }
  }

  std::optional<Value> eval_optional(const ExprPtr& e, const ScopePtr& scope) {
    if (!e) return std::nullopt;
    return eval(*e, scope);
  }

  std::string render_to_string(const Body& body, const ScopePtr& scope) {
    std::string out;
    exec_body(body, scope, out);
    return out;
  }

  Flow exec_statement(const Stmt& s, const ScopePtr& scope, std::string& out) {
    switch (s.kind) {
      case StmtKind::text: out += s.text; break;
      case StmtKind::output: out += py_str(eval(*s.expr, scope)); break;
      case StmtKind::if_: return exec_body(py_truthy(eval(*s.expr, scope)) ? s.body : s.else_body, scope, out);
      case StmtKind::for_: run_loop(s, scope, eval(*s.expr, scope), 0, out); break;
      case StmtKind::set: assign(s.target, eval(*s.expr, scope), *scope); break;
      case StmtKind::set_block: {
        Value v(render_to_string(s.body, child(scope)));
        assign(s.target, s.filter ? filter_chain(*s.filter, scope, v) : v, *scope);
        break;
      }
      case StmtKind::macro: scope->vars[s.text] = make_macro(s, scope, s.text); break;
      case StmtKind::call_block: {
        Value caller = make_macro(s, scope, "caller");
        out += py_str(call(*s.expr, scope, &caller));
        break;
      }
      case StmtKind::filter_block:
        out += py_str(filter_chain(*s.filter, scope, Value(render_to_string(s.body, child(scope)))));
        break;
      case StmtKind::with: {
        ScopePtr inner = child(scope);
        for (size_t i = 0; i < s.targets.size(); ++i) assign(s.targets[i], eval(*s.values[i], scope), *inner);
        return exec_body(s.body, inner, out);
      }
      case StmtKind::generation: out += render_to_string(s.body, child(scope)); break;
      case StmtKind::break_: return Flow::break_loop;
      case StmtKind::continue_: return Flow::continue_loop;
    }
    return Flow::normal;
  }

  void run_loop(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth0, std::string& out) {
    List items = py_iterate(iterable);
    if (s.filter) {
      List kept;
      for (Value& item : items) {
        ScopePtr test_scope = child(scope);
        assign(s.target, item, *test_scope);
        if (py_truthy(eval(*s.filter, test_scope))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec_body(s.else_body, child(scope), out);
      return;
    }
    Loop::Recurse recurse;
    if (s.recursive)
      recurse = [this, &s, scope](const Value& inner, int inner_depth) {
        if (++depth_ > kMaxCallDepth) fail(ErrorKind::runtime, "maximum recursion depth exceeded");
        std::string text;
        run_loop(s, scope, inner, inner_depth, text);
        --depth_;
        return text;
      };
    auto loop = std::make_shared<Loop>(items, depth0, std::move(recurse));
    for (size_t i = 0; i < items.size(); ++i) {
      loop->index0 = i;
      ScopePtr iteration = child(scope);
      iteration->vars["loop"] = Value(loop);
      assign(s.target, items[i], *iteration);
      if (exec_body(s.body, iteration, out) == Flow::break_loop) break;
    }
  }

  void assign(const Target& t, const Value& v, Scope& scope) {
    switch (t.kind) {
      case Target::Kind::name: scope.vars[t.name] = v; return;
      case Target::Kind::tuple: {
        const List items = py_iterate(v);
        const size_t n = t.items.size();
        if (items.size() > n) fail(ErrorKind::value, "too many values to unpack (expected " + std::to_string(n) + ")");
        if (items.size() < n)
          fail(ErrorKind::value, "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                                     std::to_string(items.size()) + ")");
        for (size_t i = 0; i < n; ++i) assign(t.items[i], items[i], scope);
        return;
      }
      case Target::Kind::namespace_attribute: {
        const Value* ns = scope.find(t.name);
        Namespace* target = ns && ns->is_object() ? dynamic_cast<Namespace*>(&ns->as_object()) : nullptr;
        if (!target) fail(ErrorKind::runtime, "cannot assign attribute on non-namespace object");
        target->set(t.attribute, v);
        return;
      }
    }
  }

  Value lookup(const std::string& name, const ScopePtr& scope) const {
    if (const Value* v = scope->find(name)) return *v;
    if (auto g = global(name)) return *g;
    return Value::undefined_name(name);
  }

  Arguments eval_args(const CallArgs& a, const ScopePtr& scope) {
    Arguments out;
    for (const auto& e : a.positional) out.positional.push_back(eval(*e, scope));
    for (const auto& [k, e] : a.keywords) out.keywords.emplace_back(k, eval(*e, scope));
    if (a.dyn_args)
      for (Value& v : py_iterate(eval(*a.dyn_args, scope))) out.positional.push_back(std::move(v));
    if (a.dyn_kwargs) {
      const Value d = eval(*a.dyn_kwargs, scope);
      if (!d.is_dict()) fail(ErrorKind::type, "argument after ** must be a mapping, not " + d.type_name());
      for (const auto& [k, v] : d.as_dict().items) {
        if (!k.is_string()) fail(ErrorKind::type, "keywords must be strings");
        out.keywords.emplace_back(k.as_string(), v);
      }
    }
    return out;
  }

  // A call expression; `caller` is added as the keyword argument caller= (a call block).
  Value call(const Expr& e, const ScopePtr& scope, const Value* caller = nullptr) {
    const Value callee = eval(*e.object, scope);
    Arguments args = eval_args(e.args, scope);
    if (caller) args.keywords.emplace_back("caller", *caller);
    try {
      require_defined(callee);
      if (!callee.is_object() || !callee.as_object().callable())
        fail(ErrorKind::type, "'" + callee.type_name() + "' object is not callable");
      return callee.as_object().call(args);
    } catch (const Failure& f) {
      rethrow(f, e);
    }
  }

  // A filter chain whose innermost operand is `input` (block set, filter block).
  Value filter_chain(const Expr& f, const ScopePtr& scope, const Value& input) {
    const Value operand = f.object ? filter_chain(*f.object, scope, input) : input;
    try {
      return apply_filter(f.name, operand, eval_args(f.args, scope));
    } catch (const Failure& fail) {
      rethrow(fail, f);
    }
  }

  bool compare(CompareKind op, const Value& a, const Value& b) {
    switch (op) {
      case CompareKind::eq: return py_equal(a, b);
      case CompareKind::ne: return !py_equal(a, b);
      case CompareKind::lt: return py_compare(CompareOp::lt, a, b);
      case CompareKind::le: return py_compare(CompareOp::le, a, b);
      case CompareKind::gt: return py_compare(CompareOp::gt, a, b);
      case CompareKind::ge: return py_compare(CompareOp::ge, a, b);
      case CompareKind::in: return py_contains(b, a);
      case CompareKind::not_in: return !py_contains(b, a);
    }
    return false;
  }

  Value eval_expression(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case ExprKind::constant: return e.value;
      case ExprKind::name: return lookup(e.name, scope);
      case ExprKind::list:
      case ExprKind::tuple: {
        List items;
        for (const auto& x : e.items) items.push_back(eval(*x, scope));
        return Value(std::move(items), e.kind == ExprKind::tuple ? Sequence::tuple : Sequence::list);
      }
      case ExprKind::dict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
          Value k = eval(*e.items[i], scope);
          if ((k.is_list() && k.sequence_style() != Sequence::tuple) || k.is_dict())
            fail(ErrorKind::type, "unhashable type: '" + k.type_name() + "'");
          d.set(std::move(k), eval(*e.items[i + 1], scope));
        }
        return Value(std::move(d));
      }
      case ExprKind::attribute: return get_attribute(eval(*e.object, scope), e.name);
      case ExprKind::item: {
        const Value object = eval(*e.object, scope);
        const Expr& index = *e.items[0];
        if (index.kind == ExprKind::slice)
          return get_slice(object, eval_optional(index.items[0], scope), eval_optional(index.items[1], scope),
                           eval_optional(index.items[2], scope));
        return get_item(object, eval(index, scope));
      }
      case ExprKind::slice: fail(ErrorKind::unsupported, "a slice inside a tuple subscript");
      case ExprKind::call: return call(e, scope);
      case ExprKind::filter: return apply_filter(e.name, eval(*e.object, scope), eval_args(e.args, scope));
      case ExprKind::test: return Value(apply_test(e.name, eval(*e.object, scope), eval_args(e.args, scope)));
      case ExprKind::negate: return py_negate(eval(*e.object, scope));
      case ExprKind::positive: return py_positive(eval(*e.object, scope));
      case ExprKind::not_: return Value(!py_truthy(eval(*e.object, scope)));
      case ExprKind::arith: {
        const Value a = eval(*e.items[0], scope), b = eval(*e.items[1], scope);
        return py_arith(e.arith_op, a, b);
      }
      case ExprKind::and_: {
        Value a = eval(*e.items[0], scope);
        return py_truthy(a) ? eval(*e.items[1], scope) : a;
      }
      case ExprKind::or_: {
        Value a = eval(*e.items[0], scope);
        return py_truthy(a) ? a : eval(*e.items[1], scope);
      }
      case ExprKind::concat: {
        std::string s;
        for (const auto& x : e.items) s += py_str(eval(*x, scope));
        return Value(std::move(s));
      }
      case ExprKind::compare: {
        Value left = eval(*e.items[0], scope);
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          Value right = eval(*e.items[i + 1], scope);
          if (!compare(e.compare_ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::condition:
        if (py_truthy(eval(*e.items[0], scope))) return eval(*e.items[1], scope);
        if (e.items[2]) return eval(*e.items[2], scope);
        return Value::undefined(UndefinedInfo{.hint = "the inline if-expression on line " + std::to_string(e.line) +
                                                      " evaluated to false and no else section was defined."});
    }
    return Value();
  }
};

Value Macro::call(const Arguments& args) { return renderer_.call_macro(def_, scope_, args, name_); }

Value Renderer::call_macro(const Stmt& def, const ScopePtr& defining, const Arguments& args, const std::string& name) {
  if (depth_ >= kMaxCallDepth) fail(ErrorKind::runtime, "maximum recursion depth exceeded");
  ScopePtr scope = child(defining);
  const size_t n = def.params.size();
  std::vector<bool> bound(n, false);
  List varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n) {
      scope->vars[def.params[i].name] = args.positional[i];
      bound[i] = true;
    } else if (def.uses_varargs) {
      varargs.push_back(args.positional[i]);
    } else {
      fail(ErrorKind::type, "macro '" + name + "' takes not more than " + std::to_string(n) + " argument(s)");
    }
  }
  Dict kwargs;
  std::optional<Value> caller;
  for (const auto& [k, v] : args.keywords) {
    size_t i = 0;
    while (i < n && def.params[i].name != k) ++i;
    if (i < n) {
      if (bound[i]) fail(ErrorKind::type, "macro '" + name + "' got multiple values for argument '" + k + "'");
      scope->vars[k] = v;
      bound[i] = true;
    } else if (k == "caller" && def.uses_caller) {
      caller = v;
    } else if (def.uses_kwargs) {
      kwargs.set(Value(k), v);
    } else {
      fail(ErrorKind::type, "macro '" + name + "' takes no keyword argument '" + k + "'");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    const Parameter& p = def.params[i];
    scope->vars[p.name] =
        p.default_value
            ? eval(*p.default_value, scope)
            : Value::undefined(UndefinedInfo{.hint = "parameter '" + p.name + "' was not provided", .name = p.name});
  }
  if (def.uses_varargs) scope->vars["varargs"] = Value(std::move(varargs), Sequence::tuple);
  if (def.uses_kwargs) scope->vars["kwargs"] = Value(std::move(kwargs));
  if (def.uses_caller)
    scope->vars["caller"] =
        caller ? *caller : Value::undefined(UndefinedInfo{.hint = "No caller defined", .name = "caller"});
  ++depth_;
  std::string out;
  exec_body(def.body, scope, out);
  --depth_;
  return Value(std::move(out));
}

}  // namespace

std::string render_body(const Body& body, const Dict& variables, const std::string& template_name) {
  auto root = std::make_shared<Scope>();
  for (const auto& [k, v] : variables.items)
    if (k.is_string()) root->vars[k.as_string()] = v;
  Renderer r(template_name);
  std::string out;
  r.exec_body(body, root, out);
  return out;
}

}  // namespace ls::tok::jinja
