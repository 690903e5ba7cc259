#pragma once
// The values a chat template computes with: Python's objects as jinja2 hands them to a template.
// None, bool, int (64-bit here), float, str (UTF-8; lengths and indexes count code points), list,
// tuple, dict (insertion-ordered, as Python's), the iterators that jinja2's filters return
// (`selectattr`, `map`, ...: always true, no len(), consumed by one pass), jinja2's Undefined, and
// objects (functions, macros, namespace(), the loop variable). Lists and dicts are immutable, as
// ImmutableSandboxedEnvironment keeps them; namespaces are the one mutable thing.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ls::tok::jinja {

class Value;
class Object;
using List = std::vector<Value>;

// How jinja2's Undefined describes itself when something uses it (runtime.Undefined).
struct UndefinedInfo {
  std::string hint;         // the whole message when set
  std::string object_type;  // object_type_repr() of the object accessed; "" for a plain name
  std::string name;         // the attribute or variable; an element's repr when !name_is_string
  bool name_is_string = true;
  bool security = false;  // an unsafe attribute: using it is a SecurityError
  std::string message() const;
};

struct Dict;

// A Python iterator over a computed sequence (a generator of jinja2's filters, reversed(list), ...):
// shared by the values that copy it, so that iterating it once exhausts it for all of them.
struct IteratorState {
  std::string type_name;  // "generator", "list_reverseiterator"
  List items;
  size_t position = 0;
};

// How a list-like value prints: Python's list, tuple, or a dict view (dict.items() and friends).
enum class Sequence : uint8_t { list, tuple, dict_items, dict_keys, dict_values };

class Value {
 public:
  enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, iterator, object };

  Value();  // Undefined, unnamed
  Value(std::nullptr_t);
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(int64_t(i)) {}
  Value(double d);
  Value(std::string s);
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(List items, Sequence style = Sequence::list);
  Value(Dict d);
  Value(std::shared_ptr<Object> object);
  static Value undefined(UndefinedInfo info);
  static Value undefined_name(std::string name);
  static Value iterator(std::string type_name, List items);

  // From JSON (ordered_json keeps the keys' order, as Python's json.load does).
  static Value from_json(const nlohmann::ordered_json& j);
  static Value from_json(const nlohmann::json& j);

  Kind kind() const;
  bool is_undefined() const { return kind() == Kind::undefined; }
  bool is_none() const { return kind() == Kind::none; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_int() const { return kind() == Kind::integer; }  // bool is not (jinja2's `integer` test)
  bool is_float() const { return kind() == Kind::floating; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::string; }
  bool is_list() const { return kind() == Kind::list; }  // any Sequence style
  bool is_dict() const { return kind() == Kind::dict; }
  bool is_iterator() const { return kind() == Kind::iterator; }
  bool is_object() const { return kind() == Kind::object; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;   // bool or int
  double as_float() const;  // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(v_); }
  Sequence sequence_style() const { return style_; }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  IteratorState& as_iterator() const { return *std::get<std::shared_ptr<IteratorState>>(v_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const std::shared_ptr<Object>& object_ptr() const { return std::get<std::shared_ptr<Object>>(v_); }
  const UndefinedInfo& undefined_info() const { return *std::get<std::shared_ptr<const UndefinedInfo>>(v_); }

  // Python's type(x).__name__ ("str", "NoneType", "Undefined", ...), for messages.
  std::string type_name() const;
  // jinja2's object_type_repr(): "None", "dict object", "str object", ...
  std::string object_type_repr() const;

 private:
  std::variant<std::shared_ptr<const UndefinedInfo>, std::monostate, bool, int64_t, double, std::string,
               std::shared_ptr<const List>, std::shared_ptr<const Dict>, std::shared_ptr<IteratorState>,
               std::shared_ptr<Object>>
      v_;
  Sequence style_ = Sequence::list;
};

// A Python dict: keys in insertion order, found by Python equality (1 == 1.0 == True).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);  // replaces the value of an equal key, else appends
};

}  // namespace ls::tok::jinja
