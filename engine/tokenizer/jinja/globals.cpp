#include "tokenizer/jinja/globals.h"

#include <ctime>

#include "tokenizer/jinja/object.h"
#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t integer(const Value& v) {
  require_defined(v);
  if (!v.is_int() && !v.is_bool())
    fail(ErrorKind::type, "'" + v.type_name() + "' object cannot be interpreted as an integer");
  return v.as_int();
}

Value range(const Arguments& a) {
  if (!a.keywords.empty()) fail(ErrorKind::type, "range() takes no keyword arguments");
  const auto& p = a.positional;
  if (p.empty() || p.size() > 3)
    fail(ErrorKind::type, "range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  const int64_t start = p.size() == 1 ? 0 : integer(p[0]), stop = integer(p.size() == 1 ? p[0] : p[1]),
                step = p.size() == 3 ? integer(p[2]) : 1;
  if (step == 0) fail(ErrorKind::value, "range() arg 3 must not be zero");
  const int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (n > kMaxRange)
    fail(ErrorKind::arithmetic, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  List out;
  for (int64_t i = 0; i < n; ++i) out.emplace_back(start + i * step);
  return Value(std::move(out));
}

// dict(mapping_or_pairs, **kwargs), as Python's dict() and Namespace() take them.
Dict dict_of(const Arguments& a, const char* function) {
  if (a.positional.size() > 1)
    fail(ErrorKind::type,
         std::string(function) + " expected at most 1 argument, got " + std::to_string(a.positional.size()));
  Dict d;
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : py_iterate(src)) {
        const List kv = py_iterate(pair);
        if (kv.size() != 2)
          fail(ErrorKind::value,
               "dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.keywords) d.set(Value(k), v);
  return d;
}

class Joiner : public Object {
 public:
  explicit Joiner(std::string separator) : separator_(std::move(separator)) {}
  std::string type_name() const override { return "Joiner"; }
  std::string object_type_repr() const override { return "jinja2.utils.Joiner object"; }
  bool callable() const override { return true; }
  Value call(const Arguments& a) override {
    bind_arguments(a, "joiner", {});
    if (!used_) {
      used_ = true;
      return Value("");
    }
    return Value(separator_);
  }

 private:
  std::string separator_;
  bool used_ = false;
};

std::string strftime_now(const std::string& format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::string out(256 + format.size() * 8, '\0');
  out.resize(std::strftime(out.data(), out.size(), format.c_str(), &tm));
  return out;
}

}  // namespace

std::optional<Value> global(std::string_view name) {
  if (name == "range") return make_function("range", range);
  if (name == "dict") return make_function("dict", [](const Arguments& a) { return Value(dict_of(a, "dict")); });
  if (name == "namespace")
    return make_function(
        "namespace", [](const Arguments& a) { return Value(std::make_shared<Namespace>(dict_of(a, "namespace"))); });
  if (name == "joiner")
    return make_function("joiner", [](const Arguments& a) {
      const auto p = bind_arguments(a, "joiner", {"sep"});
      return Value(std::make_shared<Joiner>(p[0] ? py_str(*p[0]) : ", "));
    });
  if (name == "raise_exception")
    return make_function("raise_exception", [](const Arguments& a) -> Value {
      const auto p = bind_arguments(a, "raise_exception", {"message"}, 1);
      fail(ErrorKind::raised, py_str(*p[0]));
    });
  if (name == "strftime_now")
    return make_function("strftime_now", [](const Arguments& a) {
      const auto p = bind_arguments(a, "strftime_now", {"format"}, 1);
      return Value(strftime_now(py_str(*p[0])));
    });
  return std::nullopt;
}

}  // namespace ls::tok::jinja
