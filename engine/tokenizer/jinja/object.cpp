#include "tokenizer/jinja/object.h"

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

const Value* Arguments::keyword(std::string_view name) const {
  for (const auto& [k, v] : keywords)
    if (k == name) return &v;
  return nullptr;
}

std::vector<std::optional<Value>> bind_arguments(const Arguments& args, std::string_view function,
                                                 std::span<const std::string_view> params, size_t required) {
  const std::string f(function);
  if (args.positional.size() > params.size())
    fail(ErrorKind::type, f + "() takes at most " + std::to_string(params.size()) + " argument" +
                              (params.size() == 1 ? "" : "s") + " (" + std::to_string(args.positional.size()) +
                              " given)");
  std::vector<std::optional<Value>> out(params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (const auto& [name, value] : args.keywords) {
    size_t i = 0;
    for (std::string_view p : params) {
      if (p == name) break;
      ++i;
    }
    if (i == params.size()) fail(ErrorKind::type, f + "() got an unexpected keyword argument '" + name + "'");
    if (out[i]) fail(ErrorKind::type, f + "() got multiple values for argument '" + name + "'");
    out[i] = value;
  }
  for (size_t i = 0; i < required; ++i)
    if (!out[i]) fail(ErrorKind::type, f + "() missing required argument '" + std::string(params[i]) + "'");
  return out;
}

Value Object::call(const Arguments&) { fail(ErrorKind::type, "'" + type_name() + "' object is not callable"); }

std::string Namespace::repr() const { return "<Namespace " + py_repr(Value(attributes_)) + ">"; }

std::optional<Value> Namespace::attribute(std::string_view name) const {
  if (const Value* v = attributes_.find(name)) return *v;
  return std::nullopt;
}

Value make_function(std::string name, Function::Body body) {
  return Value(std::make_shared<Function>(std::move(name), std::move(body)));
}

Value make_method(std::string name, Function::Body body) {
  return Value(std::make_shared<Function>(std::move(name), std::move(body), true));
}

}  // namespace ls::tok::jinja
