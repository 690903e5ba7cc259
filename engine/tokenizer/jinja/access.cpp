#include "tokenizer/jinja/access.h"

#include <array>
#include <functional>

#include "tokenizer/jinja/object.h"
#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

namespace {

Value undefined_attribute(const Value& object, std::string_view name) {
  return Value::undefined(UndefinedInfo{.object_type = object.object_type_repr(), .name = std::string(name)});
}

Value unsafe_attribute(const Value& object, std::string_view name) {
  return Value::undefined(UndefinedInfo{
      .hint = "access to attribute '" + std::string(name) + "' of '" + object.type_name() + "' object is unsafe.",
      .object_type = object.object_type_repr(),
      .name = std::string(name),
      .security = true});
}

const std::string& string_arg(const std::optional<Value>& v, std::string_view what) {
  if (!v || !v->is_string()) {
    require_defined(v ? *v : Value());
    fail(ErrorKind::type, std::string(what) + " must be str, not " + (v ? v->type_name() : "NoneType"));
  }
  return v->as_string();
}

std::optional<std::string> optional_string(const std::optional<Value>& v, std::string_view what) {
  if (!v || v->is_none()) return std::nullopt;
  return string_arg(v, what);
}

int64_t int_arg(const std::optional<Value>& v, int64_t default_value, std::string_view what) {
  if (!v || v->is_none()) return default_value;
  if (!v->is_int() && !v->is_bool()) {
    require_defined(*v);
    fail(ErrorKind::type,
         "'" + v->type_name() + "' object cannot be interpreted as an integer (" + std::string(what) + ")");
  }
  return v->as_int();
}

Value string_list(const std::vector<std::string>& parts) {
  List out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value(std::move(out));
}

// prefix may be a string or a tuple of strings (str.startswith / str.endswith).
bool affix_matches(const std::string& s, const Value& affix, bool at_start) {
  auto one = [&](const Value& a) {
    if (!a.is_string())
      fail(ErrorKind::type, std::string(at_start ? "startswith" : "endswith") +
                                " first arg must be str or a tuple of str, not " + a.type_name());
    return at_start ? s.starts_with(a.as_string()) : s.ends_with(a.as_string());
  };
  if (affix.is_list() && affix.sequence_style() == Sequence::tuple) {
    for (const Value& a : affix.as_list())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

std::string pad_to(const std::string& s, int64_t width, const std::optional<Value>& fill, int align) {
  const std::string f = fill ? string_arg(fill, "fill character") : " ";
  const int64_t n = int64_t(code_point_count(s));
  if (width <= n) return s;
  const int64_t total = width - n;
  const int64_t left = align < 0 ? 0 : align > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += f;
  return out;
}

// str.format with "{}", "{0}", "{name}", "{0[key]}" / "{0.attr}" and !r / !s; a format spec is refused.
std::string str_format(const std::string& format, const Arguments& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}')
        ++i;
      else
        fail(ErrorKind::value, "Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) fail(ErrorKind::value, "Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 0;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      if (colon + 1 < field.size()) fail(ErrorKind::unsupported, "str.format: format specs are not supported");
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
      field.resize(bang);
    }
    const size_t end_name = field.find_first_of(".[");
    const std::string head = field.substr(0, end_name);
    Value v;
    if (head.empty() || (head.find_first_not_of("0123456789") == std::string::npos)) {
      const size_t index = head.empty() ? auto_index++ : size_t(std::stoul(head));
      if (index >= args.positional.size())
        fail(ErrorKind::lookup,
             "Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      const Value* k = args.keyword(head);
      if (!k) fail(ErrorKind::lookup, string_repr(head));
      v = *k;
    }
    for (size_t p = end_name; p != std::string::npos && p < field.size();) {
      if (field[p] == '.') {
        const size_t e = field.find_first_of(".[", p + 1);
        v = get_attribute(v, field.substr(p + 1, e == std::string::npos ? std::string::npos : e - p - 1));
        p = e;
      } else {
        const size_t e = field.find(']', p);
        if (e == std::string::npos) fail(ErrorKind::value, "Missing ']' in format string");
        const std::string key = field.substr(p + 1, e - p - 1);
        v = key.find_first_not_of("0123456789") == std::string::npos && !key.empty()
                ? get_item(v, Value(int64_t(std::stoll(key))))
                : get_item(v, Value(key));
        p = e + 1;
      }
    }
    require_defined(v);
    out += conversion == 'r' || conversion == 'a' ? py_repr(v) : py_str(v);
  }
  return out;
}

Value string_method(const std::string& s, std::string_view name, const Arguments& a) {
  auto strip = [&](StripSide side) {
    const auto p = bind_arguments(a, name, {"chars"});
    return Value(py_strip_chars(s, optional_string(p[0], "chars"), side));
  };
  auto split = [&](bool from_right) {
    const auto p = bind_arguments(a, name, {"sep", "maxsplit"});
    return string_list(py_split(s, optional_string(p[0], "sep"), int_arg(p[1], -1, "maxsplit"), from_right));
  };
  auto affix = [&](bool at_start) {
    const auto p = bind_arguments(a, name, {at_start ? "prefix" : "suffix", "start", "end"}, 1);
    if (p[1] || p[2]) fail(ErrorKind::unsupported, std::string(name) + ": start and end are not supported");
    return Value(affix_matches(s, *p[0], at_start));
  };
  auto find = [&](bool from_right, bool must_find) {
    const auto p = bind_arguments(a, name, {"sub"}, 1);
    const int64_t at = py_find(s, string_arg(p[0], "substring"), from_right);
    if (at < 0 && must_find) fail(ErrorKind::value, "substring not found");
    return Value(at);
  };
  auto no_args = [&]() { bind_arguments(a, name, {}); };
  if (name == "strip") return strip(StripSide::both);
  if (name == "lstrip") return strip(StripSide::left);
  if (name == "rstrip") return strip(StripSide::right);
  if (name == "split") return split(false);
  if (name == "rsplit") return split(true);
  if (name == "startswith") return affix(true);
  if (name == "endswith") return affix(false);
  if (name == "find") return find(false, false);
  if (name == "rfind") return find(true, false);
  if (name == "index") return find(false, true);
  if (name == "rindex") return find(true, true);
  if (name == "upper") return no_args(), Value(py_upper(s));
  if (name == "lower") return no_args(), Value(py_lower(s));
  if (name == "title") return no_args(), Value(py_title(s));
  if (name == "capitalize") return no_args(), Value(py_capitalize(s));
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
    return no_args(), Value(py_is(s, CharClass::digit));
  if (name == "isalpha") return no_args(), Value(py_is(s, CharClass::alpha));
  if (name == "isalnum") return no_args(), Value(py_is(s, CharClass::alnum));
  if (name == "isspace") return no_args(), Value(py_is(s, CharClass::space));
  if (name == "islower") return no_args(), Value(py_is(s, CharClass::lower));
  if (name == "isupper") return no_args(), Value(py_is(s, CharClass::upper));
  if (name == "splitlines") {
    const auto p = bind_arguments(a, name, {"keepends"});
    return string_list(py_splitlines(s, p[0] && py_truthy(*p[0])));
  }
  if (name == "replace") {
    const auto p = bind_arguments(a, name, {"old", "new", "count"}, 2);
    return Value(py_replace(s, string_arg(p[0], "replace() argument 1"), string_arg(p[1], "replace() argument 2"),
                            int_arg(p[2], -1, "count")));
  }
  if (name == "count") {
    const auto p = bind_arguments(a, name, {"sub"}, 1);
    return Value(py_count(s, string_arg(p[0], "substring")));
  }
  if (name == "join") {
    const auto p = bind_arguments(a, name, {"iterable"}, 1);
    std::string out;
    size_t i = 0;
    for (const Value& item : py_iterate(*p[0])) {
      if (!item.is_string())
        fail(ErrorKind::type,
             "sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() + " found");
      if (i++) out += s;
      out += item.as_string();
    }
    return Value(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const auto p = bind_arguments(a, name, {"affix"}, 1);
    const std::string& x = string_arg(p[0], name);
    if (name == "removeprefix") return Value(s.starts_with(x) ? s.substr(x.size()) : s);
    return Value(s.ends_with(x) ? s.substr(0, s.size() - x.size()) : s);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    const auto p = bind_arguments(a, name, {"width", "fillchar"}, 1);
    return Value(pad_to(s, int_arg(p[0], 0, "width"), p[1], name == "ljust" ? -1 : name == "rjust" ? 1 : 0));
  }
  if (name == "partition" || name == "rpartition") {
    const auto p = bind_arguments(a, name, {"sep"}, 1);
    const std::string& sep = string_arg(p[0], "sep");
    if (sep.empty()) fail(ErrorKind::value, "empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos)
      return name == "partition" ? Value(List{Value(s), Value(""), Value("")}, Sequence::tuple)
                                 : Value(List{Value(""), Value(""), Value(s)}, Sequence::tuple);
    return Value(List{Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))}, Sequence::tuple);
  }
  if (name == "format") return Value(str_format(s, a));
  return Value();  // not reached: string_methods() lists the names
}

const std::array kStringMethods = {"strip",    "lstrip",  "rstrip",     "split",        "rsplit",       "startswith",
                                   "endswith", "find",    "rfind",      "index",        "rindex",       "upper",
                                   "lower",    "title",   "capitalize", "isdigit",      "isdecimal",    "isnumeric",
                                   "isalpha",  "isalnum", "isspace",    "islower",      "isupper",      "splitlines",
                                   "replace",  "count",   "join",       "removeprefix", "removesuffix", "center",
                                   "ljust",    "rjust",   "partition",  "rpartition",   "format"};

bool is_string_method(std::string_view name) {
  for (std::string_view m : kStringMethods)
    if (m == name) return true;
  return false;
}

Value dict_view(const Dict& d, Sequence style) {
  List out;
  for (const auto& [k, v] : d.items) {
    if (style == Sequence::dict_items)
      out.emplace_back(List{k, v}, Sequence::tuple);
    else
      out.push_back(style == Sequence::dict_keys ? k : v);
  }
  return Value(std::move(out), style);
}

std::optional<Value> dict_method(const Value& self, std::string_view name) {
  if (name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update")
    return unsafe_attribute(self, name);
  const std::string n(name);
  if (name == "get")
    return make_method(n, [self](const Arguments& a) {
      const auto p = bind_arguments(a, "get", {"key", "default"}, 1);
      const Value* v = self.as_dict().find(*p[0]);
      return v ? *v : p[1] ? *p[1] : Value(nullptr);
    });
  const Sequence style = name == "items"    ? Sequence::dict_items
                         : name == "keys"   ? Sequence::dict_keys
                         : name == "values" ? Sequence::dict_values
                                            : Sequence::list;
  if (style != Sequence::list)
    return make_method(n, [self, style, n](const Arguments& a) {
      bind_arguments(a, n, {});
      return dict_view(self.as_dict(), style);
    });
  if (name == "copy")
    return make_method(n, [self](const Arguments& a) {
      bind_arguments(a, "copy", {});
      return self;
    });
  return std::nullopt;
}

std::optional<Value> list_method(const Value& self, std::string_view name) {
  const bool is_list = self.sequence_style() == Sequence::list;
  if (is_list && (name == "append" || name == "reverse" || name == "insert" || name == "sort" || name == "extend" ||
                  name == "remove"))
    return unsafe_attribute(self, name);
  if (is_list && (name == "pop" || name == "clear"))
    return make_method(std::string(name), [name = std::string(name)](const Arguments&) -> Value {
      fail(ErrorKind::unsupported, "list." + name + "(): templates here cannot change lists");
    });
  if (name == "index" || name == "count")
    return make_method(std::string(name), [self, name = std::string(name)](const Arguments& a) {
      const auto p = bind_arguments(a, name, {"value"}, 1);
      const List& items = self.as_list();
      int64_t count = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!py_equal(items[i], *p[0])) continue;
        if (name == "index") return Value(int64_t(i));
        ++count;
      }
      if (name == "index") fail(ErrorKind::value, py_repr(*p[0]) + " is not in list");
      return Value(count);
    });
  if (is_list && name == "copy")
    return make_method("copy", [self](const Arguments& a) {
      bind_arguments(a, "copy", {});
      return self;
    });
  return std::nullopt;
}

// The Python attribute `name` of `object`, if it has one.
std::optional<Value> python_attribute(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::string:
      if (!is_string_method(name)) return std::nullopt;
      return make_method(std::string(name), [self = object.as_string(), name = std::string(name)](const Arguments& a) {
        return string_method(self, name, a);
      });
    case Value::Kind::dict: return dict_method(object, name);
    case Value::Kind::list: return list_method(object, name);
    case Value::Kind::object: return object.as_object().attribute(name);
    default: return std::nullopt;
  }
}

// object[key] the Python way, or nullopt where Python raises TypeError or LookupError.
std::optional<Value> python_item(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::dict: {
      if (key.is_list() && key.sequence_style() != Sequence::tuple) return std::nullopt;  // unhashable
      const Value* v = object.as_dict().find(key);
      if (!v) return std::nullopt;
      return *v;
    }
    case Value::Kind::list:
    case Value::Kind::string: {
      if (!key.is_int() && !key.is_bool()) return std::nullopt;
      if (object.is_list() && object.sequence_style() > Sequence::tuple) return std::nullopt;  // views
      int64_t i = key.as_int();
      if (object.is_list()) {
        const List& items = object.as_list();
        if (i < 0) i += int64_t(items.size());
        if (i < 0 || i >= int64_t(items.size())) return std::nullopt;
        return items[size_t(i)];
      }
      const std::u32string u = decode_utf8(object.as_string());
      if (i < 0) i += int64_t(u.size());
      if (i < 0 || i >= int64_t(u.size())) return std::nullopt;
      return Value(encode_utf8(std::u32string(1, u[size_t(i)])));
    }
    default: return std::nullopt;
  }
}

}  // namespace

Value get_attribute(const Value& object, std::string_view name) {
  require_defined(object);
  if (auto v = python_attribute(object, name)) return *v;
  if (auto v = python_item(object, Value(name))) return *v;
  return undefined_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  require_defined(object);
  if (auto v = python_item(object, key)) return *v;
  if (key.is_string()) {
    if (auto v = python_attribute(object, key.as_string())) return *v;
    return undefined_attribute(object, key.as_string());
  }
  return Value::undefined(
      UndefinedInfo{.object_type = object.object_type_repr(), .name = py_repr(key), .name_is_string = false});
}

Value get_slice(const Value& object, const std::optional<Value>& start, const std::optional<Value>& stop,
                const std::optional<Value>& step) {
  require_defined(object);
  const bool is_text = object.is_string();
  if (!is_text && !(object.is_list() && object.sequence_style() <= Sequence::tuple))
    return Value::undefined(
        UndefinedInfo{.object_type = object.object_type_repr(), .name = "slice", .name_is_string = false});
  auto bound = [](const std::optional<Value>& v) -> std::optional<int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_int() && !v->is_bool()) {
      require_defined(*v);
      fail(ErrorKind::type, "slice indices must be integers or None or have an __index__ method");
    }
    return v->as_int();
  };
  const int64_t st = bound(step).value_or(1);
  if (st == 0) fail(ErrorKind::value, "slice step cannot be zero");
  const std::u32string text = is_text ? decode_utf8(object.as_string()) : std::u32string();
  const int64_t n = is_text ? int64_t(text.size()) : int64_t(object.as_list().size());
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t if_absent) {
    if (!v) return if_absent;
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(bound(start), st < 0 ? n - 1 : 0), e = adjust(bound(stop), st < 0 ? -1 : n);
  std::u32string out_text;
  List out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (is_text)
      out_text += text[size_t(i)];
    else
      out.push_back(object.as_list()[size_t(i)]);
  }
  if (is_text) return Value(encode_utf8(out_text));
  return Value(std::move(out), object.sequence_style());
}

}  // namespace ls::tok::jinja
