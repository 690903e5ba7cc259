#pragma once
// Objects a template can hold besides data: functions (range, namespace, raise_exception, bound string
// and dict methods, macros), namespace() and the loop variable. Arguments are Python's: positional
// then keyword; bind_arguments() matches them to a signature as a Python def does.
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

struct Arguments {
  List positional;
  std::vector<std::pair<std::string, Value>> keywords;
  const Value* keyword(std::string_view name) const;
};

// The arguments of `function(params...)`: one entry per parameter, nullopt where not given. Fails
// (TypeError) on too many positional arguments, an unknown keyword, a parameter given twice, or fewer
// than `required` given.
std::vector<std::optional<Value>> bind_arguments(const Arguments& args, std::string_view function,
                                                 std::span<const std::string_view> params, size_t required = 0);
inline std::vector<std::optional<Value>> bind_arguments(const Arguments& args, std::string_view function,
                                                        std::initializer_list<std::string_view> params,
                                                        size_t required = 0) {
  return bind_arguments(args, function, std::span<const std::string_view>(params.begin(), params.size()), required);
}

class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;  // Python's type(x).__name__
  virtual std::string object_type_repr() const { return type_name() + " object"; }
  virtual std::string repr() const { return "<" + type_name() + " object>"; }
  // obj.name, or nullopt when the object has no such attribute.
  virtual std::optional<Value> attribute(std::string_view) const { return std::nullopt; }
  virtual bool callable() const { return false; }
  virtual Value call(const Arguments& args);  // fails: "'X' object is not callable"
};

// A function written in C++: a global, a filter used as a value, a bound method.
class Function : public Object {
 public:
  using Body = std::function<Value(const Arguments&)>;
  Function(std::string name, Body body, bool method = false)
      : name_(std::move(name)), body_(std::move(body)), method_(method) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return (method_ ? "<built-in method " : "<built-in function ") + name_ + ">"; }
  bool callable() const override { return true; }
  Value call(const Arguments& args) override { return body_(args); }

 private:
  std::string name_;
  Body body_;
  bool method_;
};

// jinja2.utils.Namespace: the one mutable object; `{% set ns.x = ... %}` changes it.
class Namespace : public Object {
 public:
  explicit Namespace(Dict attributes) : attributes_(std::move(attributes)) {}
  std::string type_name() const override { return "Namespace"; }
  std::string object_type_repr() const override { return "jinja2.utils.Namespace object"; }
  std::string repr() const override;
  std::optional<Value> attribute(std::string_view name) const override;
  void set(const std::string& name, Value value) { attributes_.set(Value(name), std::move(value)); }

 private:
  Dict attributes_;
};

Value make_function(std::string name, Function::Body body);
Value make_method(std::string name, Function::Body body);

}  // namespace ls::tok::jinja
