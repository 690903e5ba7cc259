#include "tokenizer/jinja/value.h"

#include "tokenizer/jinja/object.h"
#include "tokenizer/jinja/python_ops.h"

namespace ls::tok::jinja {

std::string UndefinedInfo::message() const {
  if (!hint.empty()) return hint;
  if (object_type.empty()) return "'" + name + "' is undefined";
  if (!name_is_string) return object_type + " has no element " + name;
  return "'" + object_type + "' has no attribute '" + name + "'";
}

Value::Value() : v_(std::make_shared<const UndefinedInfo>()) {}
Value::Value(std::nullptr_t) : v_(std::monostate{}) {}
Value::Value(bool b) : v_(b) {}
Value::Value(int64_t i) : v_(i) {}
Value::Value(double d) : v_(d) {}
Value::Value(std::string s) : v_(std::move(s)) {}
Value::Value(List items, Sequence style) : v_(std::make_shared<const List>(std::move(items))), style_(style) {}
Value::Value(Dict d) : v_(std::make_shared<const Dict>(std::move(d))) {}
Value::Value(std::shared_ptr<Object> object) : v_(std::move(object)) {}

Value Value::undefined(UndefinedInfo info) {
  Value v;
  v.v_ = std::make_shared<const UndefinedInfo>(std::move(info));
  return v;
}

Value Value::undefined_name(std::string name) { return undefined(UndefinedInfo{.name = std::move(name)}); }

Value Value::iterator(std::string type_name, List items) {
  Value v;
  v.v_ = std::make_shared<IteratorState>(IteratorState{std::move(type_name), std::move(items), 0});
  return v;
}

namespace {
template <class Json>
Value value_of_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return Value(nullptr);
    case Json::value_t::boolean: return Value(j.template get<bool>());
    case Json::value_t::number_integer: return Value(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) return Value(double(u));
      return Value(int64_t(u));
    }
    case Json::value_t::number_float: return Value(j.template get<double>());
    case Json::value_t::string: return Value(j.template get<std::string>());
    case Json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_of_json(e));
      return Value(std::move(items));
    }
    case Json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.items.emplace_back(Value(k), value_of_json(e));
      return Value(std::move(d));
    }
    default: return Value(nullptr);  // binary and discarded values do not come from JSON text
  }
}
}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) { return value_of_json(j); }
Value Value::from_json(const nlohmann::json& j) { return value_of_json(j); }

Value::Kind Value::kind() const {
  switch (v_.index()) {
    case 0: return Kind::undefined;
    case 1: return Kind::none;
    case 2: return Kind::boolean;
    case 3: return Kind::integer;
    case 4: return Kind::floating;
    case 5: return Kind::string;
    case 6: return Kind::list;
    case 7: return Kind::dict;
    case 8: return Kind::iterator;
    default: return Kind::object;
  }
}

int64_t Value::as_int() const { return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(v_); }

double Value::as_float() const { return is_float() ? std::get<double>(v_) : double(as_int()); }

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::list:
      switch (style_) {
        case Sequence::list: return "list";
        case Sequence::tuple: return "tuple";
        case Sequence::dict_items: return "dict_items";
        case Sequence::dict_keys: return "dict_keys";
        case Sequence::dict_values: return "dict_values";
      }
      return "list";
    case Kind::dict: return "dict";
    case Kind::iterator: return as_iterator().type_name;
    case Kind::object: return as_object().type_name();
  }
  return "object";
}

std::string Value::object_type_repr() const {
  if (is_none()) return "None";
  if (is_undefined()) return "jinja2.runtime.Undefined object";
  if (is_object()) return as_object().object_type_repr();
  return type_name() + " object";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (py_equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (py_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

}  // namespace ls::tok::jinja
