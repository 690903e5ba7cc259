#include "tokenizer/jinja/filters.h"

#include <utf8proc.h>

#include <algorithm>
#include <functional>
#include <map>

#include "tokenizer/jinja/access.h"
#include "tokenizer/jinja/json_dumps.h"
#include "tokenizer/jinja/number_filters.h"
#include "tokenizer/jinja/predicates.h"
#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/py_str.h"

namespace ls::tok::jinja {

namespace {

using Params = FilterParams;

bool flag(const std::optional<Value>& v) { return v && py_truthy(*v); }

std::string text_of(const Value& v) { return py_str(v); }  // jinja2's soft_str: str() unless already a str

Value generator(List items) { return Value::iterator("generator", std::move(items)); }

// ---- attribute getters (make_attrgetter / make_multi_attrgetter) ----

std::vector<Value> attribute_parts(const Value& attribute) {
  if (!attribute.is_string()) return {attribute};
  std::vector<Value> parts;
  for (const std::string& p : py_split(attribute.as_string(), std::string("."), -1, false)) {
    if (!p.empty() && p.find_first_not_of("0123456789") == std::string::npos)
      parts.emplace_back(int64_t(std::stoll(p)));
    else
      parts.emplace_back(p);
  }
  return parts;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.as_string())) : v; }

using Getter = std::function<Value(const Value&)>;

Getter attribute_getter(const std::optional<Value>& attribute, bool lower_strings = false,
                        const std::optional<Value>& default_value = std::nullopt) {
  std::vector<Value> parts;
  if (attribute && !attribute->is_none()) parts = attribute_parts(*attribute);
  return [parts, lower_strings, default_value](const Value& item) {
    Value v = item;
    for (const Value& part : parts) {
      v = get_item(v, part);
      if (default_value && !default_value->is_none() && v.is_undefined()) v = *default_value;
    }
    return lower_strings ? ignore_case(v) : v;
  };
}

// sort's key: one value per comma-separated attribute (a list of them when there are several).
Getter multi_attribute_getter(const std::optional<Value>& attribute, bool lower_strings) {
  if (!attribute || attribute->is_none() || !attribute->is_string()) return attribute_getter(attribute, lower_strings);
  std::vector<Getter> getters;
  for (const std::string& a : py_split(attribute->as_string(), std::string(","), -1, false))
    getters.push_back(attribute_getter(Value(a), lower_strings));
  return [getters](const Value& item) {
    List key;
    for (const auto& g : getters) key.push_back(g(item));
    return Value(std::move(key));
  };
}

// ---- strings ----

// jinja2's title: words start after runs of [-\s({\[<]; each word's first character upper-cased, the
// rest lower-cased.
std::string do_title(const std::string& s) {
  const std::u32string u = decode_utf8(s);
  auto boundary = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    const bool run_of_boundaries = boundary(u[i]);
    while (j < u.size() && boundary(u[j]) == run_of_boundaries) ++j;
    const std::string piece = encode_utf8(std::u32string_view(u).substr(i, j - i));
    if (run_of_boundaries) {
      out += piece;
    } else {
      const std::string first = encode_utf8(std::u32string_view(u).substr(i, 1));
      out += py_upper(first) + py_lower(piece.substr(first.size()));
    }
    i = j;
  }
  return out;
}

Value do_indent(const std::string& text, const Params& p) {
  std::string indentation = "    ";
  if (p[0])
    indentation =
        p[0]->is_string() ? p[0]->as_string() : std::string(size_t(std::max<int64_t>(0, p[0]->as_int())), ' ');
  const std::vector<std::string> lines = py_splitlines(text + "\n", false);
  std::string out;
  if (flag(p[2])) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + indentation : "") + lines[i];
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : indentation + lines[i]);
  }
  if (flag(p[1])) out = indentation + out;
  return Value(out);
}

bool is_word_char(char32_t c) {
  if (c == '_') return true;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return true;
    default: return false;
  }
}

int64_t word_count(const std::string& s) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(s)) {
    const bool w = is_word_char(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return n;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value do_tojson(const Value& v, const Params& p) {
  JsonDumpOptions o;
  o.ensure_ascii = flag(p[0]);
  if (p[1] && !p[1]->is_none()) {
    o.indent = p[1]->is_string() ? p[1]->as_string() : std::string(size_t(std::max<int64_t>(0, p[1]->as_int())), ' ');
    o.item_separator = ",";
  }
  if (p[2] && !p[2]->is_none()) {
    const List parts = py_iterate(*p[2]);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
      fail(ErrorKind::value, "separators must be a pair of strings");
    o.item_separator = parts[0].as_string();
    o.key_separator = parts[1].as_string();
  }
  o.sort_keys = flag(p[3]);
  return Value(json_dumps(v, o));
}

// ---- sequences ----

Value do_first(const Value& v) {
  if (v.is_iterator()) {
    IteratorState& it = v.as_iterator();
    if (it.position < it.items.size()) return it.items[it.position++];
  } else {
    List items = py_iterate(v);
    if (!items.empty()) return items.front();
  }
  return Value::undefined(UndefinedInfo{.hint = "No first item, sequence was empty."});
}

Value do_last(const Value& v) {
  if (v.is_iterator()) fail(ErrorKind::type, "'" + v.type_name() + "' object is not reversible");
  List items = py_iterate(v);
  if (!items.empty()) return items.back();
  return Value::undefined(UndefinedInfo{.hint = "No last item, sequence was empty."});
}

Value do_reverse(const Value& v) {
  if (v.is_string()) {
    std::u32string u = decode_utf8(v.as_string());
    std::reverse(u.begin(), u.end());
    return Value(encode_utf8(u));
  }
  if (v.is_iterator() || !(v.is_list() || v.is_dict() || v.is_undefined())) {
    if (!v.is_iterator() && !v.is_object()) fail(ErrorKind::value, "argument must be iterable");
    List items = py_iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  List items = py_iterate(v);
  std::reverse(items.begin(), items.end());
  const char* type = v.is_dict()                                           ? "dict_reversekeyiterator"
                     : v.is_list() && v.sequence_style() == Sequence::list ? "list_reverseiterator"
                                                                           : "reversed";
  return Value::iterator(type, std::move(items));
}

Value do_join(const Value& v, const Params& p) {
  const std::string separator = p[0] ? text_of(*p[0]) : "";
  const Getter get = attribute_getter(p[1]);
  std::string out;
  bool first = true;
  for (const Value& item : py_iterate(v)) {
    if (!first) out += separator;
    first = false;
    out += text_of(p[1] ? get(item) : item);
  }
  return Value(std::move(out));
}

Value do_dictsort(const Value& v, const Params& p) {
  require_defined(v);
  if (!v.is_dict()) fail(ErrorKind::type, "'" + v.type_name() + "' object has no attribute 'items'");
  const std::string by = p[1] ? text_of(*p[1]) : "key";
  if (by != "key" && by != "value") fail(ErrorKind::value, "You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  const bool case_sensitive = flag(p[0]);
  List items;
  for (const auto& [k, x] : v.as_dict().items) items.emplace_back(List{k, x}, Sequence::tuple);
  auto key = [&](const Value& item) {
    const Value& x = item.as_list()[pos];
    return case_sensitive ? x : ignore_case(x);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) { return py_less(key(a), key(b)); });
  if (flag(p[2]))
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& a, const Value& b) { return py_less(key(b), key(a)); });
  return Value(std::move(items));
}

Value do_sort(const Value& v, const Params& p) {
  const Getter key = multi_attribute_getter(p[2], !flag(p[1]));
  List items = py_iterate(v);
  std::vector<Value> keys;
  for (const Value& item : items) keys.push_back(key(item));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool reverse = flag(p[0]);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reverse ? py_less(keys[b], keys[a]) : py_less(keys[a], keys[b]); });
  List out;
  for (size_t i : order) out.push_back(items[i]);
  return Value(std::move(out));
}

void require_hashable(const Value& v) {
  if ((v.is_list() && v.sequence_style() != Sequence::tuple) || v.is_dict())
    fail(ErrorKind::type, "unhashable type: '" + v.type_name() + "'");
  if (v.is_list())
    for (const Value& x : v.as_list()) require_hashable(x);
}

Value do_unique(const Value& v, const Params& p) {
  const Getter key = attribute_getter(p[1], !flag(p[0]));
  List seen, out;
  for (const Value& item : py_iterate(v)) {
    const Value k = key(item);
    require_hashable(k);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return generator(std::move(out));
}

Value min_or_max(const Value& v, const Params& p, bool want_max) {
  const List items = py_iterate(v);
  if (items.empty()) return Value::undefined(UndefinedInfo{.hint = "No aggregated item, sequence was empty."});
  const Getter key = attribute_getter(p[1], !flag(p[0]));
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? py_less(best_key, k) : py_less(k, best_key)) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value do_sum(const Value& v, const Params& p) {
  Value total = p[1] ? *p[1] : Value(int64_t(0));
  if (total.is_string()) fail(ErrorKind::type, "sum() can't sum strings [use ''.join(seq) instead]");
  const Getter get = attribute_getter(p[0]);
  for (const Value& item : py_iterate(v)) total = py_arith(ArithOp::add, total, p[0] ? get(item) : item);
  return total;
}

Value do_items(const Value& v) {
  if (v.is_undefined()) return generator({});
  if (!v.is_dict()) fail(ErrorKind::type, "Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, x] : v.as_dict().items) out.emplace_back(List{k, x}, Sequence::tuple);
  return generator(std::move(out));
}

Value do_batch(const Value& v, const Params& p) {
  const int64_t count = p[0]->as_int();
  List out, row;
  for (const Value& item : py_iterate(v)) {
    if (int64_t(row.size()) == count) {
      out.emplace_back(std::move(row));
      row.clear();
    }
    row.push_back(item);
  }
  if (!row.empty()) {
    if (p[1] && !p[1]->is_none())
      while (int64_t(row.size()) < count) row.push_back(*p[1]);
    out.emplace_back(std::move(row));
  }
  return generator(std::move(out));
}

Value do_slice(const Value& v, const Params& p) {
  const List seq = py_iterate(v);
  const int64_t slices = p[0]->as_int();
  if (slices <= 0) fail(ErrorKind::arithmetic, "integer division or modulo by zero");
  const int64_t length = int64_t(seq.size()), per = length / slices, extra = length % slices;
  int64_t offset = 0;
  List out;
  for (int64_t n = 0; n < slices; ++n) {
    const int64_t start = offset + n * per;
    if (n < extra) ++offset;
    const int64_t end = offset + (n + 1) * per;
    List part(seq.begin() + start, seq.begin() + end);
    if (p[1] && !p[1]->is_none() && n >= extra) part.push_back(*p[1]);
    out.emplace_back(std::move(part));
  }
  return generator(std::move(out));
}

// map / select / reject / selectattr / rejectattr: their extra arguments are Python's *args, **kwargs.
Arguments rest(const Arguments& args, size_t skip) {
  Arguments r;
  r.positional.assign(args.positional.begin() + std::ptrdiff_t(std::min(skip, args.positional.size())),
                      args.positional.end());
  r.keywords = args.keywords;
  return r;
}

Value do_map(const Value& v, const Arguments& args) {
  if (!py_truthy(v)) return generator({});
  std::function<Value(const Value&)> f;
  if (args.positional.empty() && args.keyword("attribute")) {
    std::optional<Value> default_value;
    for (const auto& [k, x] : args.keywords) {
      if (k == "default")
        default_value = x;
      else if (k != "attribute")
        fail(ErrorKind::value, "Unexpected keyword argument '" + k + "'");
    }
    f = attribute_getter(*args.keyword("attribute"), false, default_value);
  } else {
    if (args.positional.empty()) fail(ErrorKind::value, "map requires a filter argument");
    const Value& name = args.positional[0];
    if (!name.is_string() || !is_filter(name.as_string()))
      fail(ErrorKind::runtime, "No filter named " + py_repr(name) + ".");
    const Arguments r = rest(args, 1);
    f = [name = name.as_string(), r](const Value& item) { return apply_filter(name, item, r); };
  }
  List out;
  for (const Value& item : py_iterate(v)) out.push_back(f(item));
  return generator(std::move(out));
}

Value select_or_reject(const Value& v, const Arguments& args, bool select, bool by_attribute) {
  if (!py_truthy(v)) return generator({});
  Getter get = [](const Value& x) { return x; };
  size_t off = 0;
  if (by_attribute) {
    if (args.positional.empty()) fail(ErrorKind::value, "Missing parameter for attribute name");
    get = attribute_getter(args.positional[0]);
    off = 1;
  }
  std::function<bool(const Value&)> test = [](const Value& x) { return py_truthy(x); };
  if (args.positional.size() > off) {
    const Value& name = args.positional[off];
    if (!name.is_string() || !is_test(name.as_string()))
      fail(ErrorKind::runtime, "No test named " + py_repr(name) + ".");
    const Arguments r = rest(args, off + 1);
    test = [name = name.as_string(), r](const Value& x) { return apply_test(name, x, r); };
  }
  List out;
  for (const Value& item : py_iterate(v))
    if (test(get(item)) == select) out.push_back(item);
  return generator(std::move(out));
}

Value do_attr(const Value& v, const Value& name) {
  require_defined(v);
  const std::string n = text_of(name);
  if (v.is_dict() && !v.as_dict().find(std::string_view(n))) {
    const Value found = get_attribute(v, n);  // a method, or the item: keep only a method
    if (found.is_object()) return found;
    return Value::undefined(UndefinedInfo{.object_type = v.object_type_repr(), .name = n});
  }
  return get_attribute(v, n);
}

using Filter = std::function<Value(const Value&, const Arguments&)>;

// A filter with a fixed signature: `params` are its parameters after the value (static strings).
Filter with(std::string name, std::initializer_list<std::string_view> params, size_t required,
            std::function<Value(const Value&, const Params&)> f) {
  std::vector<std::string_view> names(params.begin(), params.end());
  return [name = std::move(name), names, required, f](const Value& v, const Arguments& a) {
    return f(v, bind_arguments(a, name, std::span<const std::string_view>(names), required));
  };
}

Filter string_filter(std::string name, std::function<std::string(const std::string&)> f) {
  return with(std::move(name), {}, 0, [f](const Value& v, const Params&) { return Value(f(text_of(v))); });
}

Filter unsupported(std::string name) {
  return [name](const Value&, const Arguments&) -> Value {
    fail(ErrorKind::unsupported, "the filter '" + name + "' is not supported in chat templates here");
  };
}

const std::map<std::string, Filter, std::less<>>& filters() {
  static const std::map<std::string, Filter, std::less<>> table = [] {
    std::map<std::string, Filter, std::less<>> t;
    t["abs"] = with("abs", {}, 0, [](const Value& v, const Params&) { return do_abs(v); });
    t["attr"] = with("attr", {"name"}, 1, [](const Value& v, const Params& p) { return do_attr(v, *p[0]); });
    t["batch"] = with("batch", {"linecount", "fill_with"}, 1, do_batch);
    t["capitalize"] = string_filter("capitalize", [](const std::string& s) { return py_capitalize(s); });
    t["center"] = with("center", {"width"}, 0, [](const Value& v, const Params& p) {
      Arguments a;
      a.positional.push_back(p[0] ? *p[0] : Value(int64_t(80)));
      return get_attribute(Value(text_of(v)), "center").as_object().call(a);
    });
    t["count"] = t["length"] = with("length", {}, 0, [](const Value& v, const Params&) { return Value(py_len(v)); });
    t["d"] = t["default"] = with("default", {"default_value", "boolean"}, 0, [](const Value& v, const Params& p) {
      if (v.is_undefined() || (flag(p[1]) && !py_truthy(v))) return p[0] ? *p[0] : Value("");
      return v;
    });
    t["dictsort"] = with("dictsort", {"case_sensitive", "by", "reverse"}, 0, do_dictsort);
    t["e"] = t["escape"] = t["forceescape"] =
        string_filter("escape", [](const std::string& s) { return html_escape(s); });
    t["first"] = with("first", {}, 0, [](const Value& v, const Params&) { return do_first(v); });
    t["float"] = with("float", {"default"}, 0, do_float);
    t["format"] = [](const Value& v, const Arguments& a) {
      if (!a.positional.empty() && !a.keywords.empty())
        fail(ErrorKind::value, "can't handle positional and keyword arguments at the same time");
      Dict kw;
      for (const auto& [k, x] : a.keywords) kw.set(Value(k), x);
      return Value(percent_format(text_of(v), a.keywords.empty() ? Value(a.positional, Sequence::tuple) : Value(kw)));
    };
    t["indent"] = with("indent", {"width", "first", "blank"}, 0,
                       [](const Value& v, const Params& p) { return do_indent(text_of(v), p); });
    t["int"] = with("int", {"default", "base"}, 0, do_int);
    t["items"] = with("items", {}, 0, [](const Value& v, const Params&) { return do_items(v); });
    t["join"] = with("join", {"d", "attribute"}, 0, do_join);
    t["last"] = with("last", {}, 0, [](const Value& v, const Params&) { return do_last(v); });
    t["list"] = with("list", {}, 0, [](const Value& v, const Params&) { return Value(py_iterate(v)); });
    t["lower"] = string_filter("lower", [](const std::string& s) { return py_lower(s); });
    t["map"] = do_map;
    t["max"] = with("max", {"case_sensitive", "attribute"}, 0,
                    [](const Value& v, const Params& p) { return min_or_max(v, p, true); });
    t["min"] = with("min", {"case_sensitive", "attribute"}, 0,
                    [](const Value& v, const Params& p) { return min_or_max(v, p, false); });
    t["reject"] = [](const Value& v, const Arguments& a) { return select_or_reject(v, a, false, false); };
    t["rejectattr"] = [](const Value& v, const Arguments& a) { return select_or_reject(v, a, false, true); };
    t["replace"] = with("replace", {"old", "new", "count"}, 2, [](const Value& v, const Params& p) {
      return Value(
          py_replace(text_of(v), text_of(*p[0]), text_of(*p[1]), p[2] && !p[2]->is_none() ? p[2]->as_int() : -1));
    });
    t["reverse"] = with("reverse", {}, 0, [](const Value& v, const Params&) { return do_reverse(v); });
    t["round"] = with("round", {"precision", "method"}, 0, do_round);
    t["safe"] = t["string"] = with("string", {}, 0, [](const Value& v, const Params&) { return Value(text_of(v)); });
    t["select"] = [](const Value& v, const Arguments& a) { return select_or_reject(v, a, true, false); };
    t["selectattr"] = [](const Value& v, const Arguments& a) { return select_or_reject(v, a, true, true); };
    t["slice"] = with("slice", {"slices", "fill_with"}, 1, do_slice);
    t["sort"] = with("sort", {"reverse", "case_sensitive", "attribute"}, 0, do_sort);
    t["sum"] = with("sum", {"attribute", "start"}, 0, do_sum);
    t["title"] = string_filter("title", do_title);
    t["tojson"] = with("tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}, 0, do_tojson);
    t["trim"] = with("trim", {"chars"}, 0, [](const Value& v, const Params& p) {
      std::optional<std::string> chars;
      if (p[0] && !p[0]->is_none()) chars = text_of(*p[0]);
      return Value(py_strip_chars(text_of(v), chars, StripSide::both));
    });
    t["unique"] = with("unique", {"case_sensitive", "attribute"}, 0, do_unique);
    t["upper"] = string_filter("upper", [](const std::string& s) { return py_upper(s); });
    t["wordcount"] =
        with("wordcount", {}, 0, [](const Value& v, const Params&) { return Value(word_count(text_of(v))); });
    for (const char* name : {"filesizeformat", "pprint", "random", "striptags", "truncate", "urlencode", "urlize",
                             "wordwrap", "xmlattr", "groupby"})
      t[name] = unsupported(name);
    return t;
  }();
  return table;
}

}  // namespace

bool is_filter(std::string_view name) { return filters().count(name) > 0; }

Value apply_filter(std::string_view name, const Value& value, const Arguments& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) fail(ErrorKind::runtime, "No filter named '" + std::string(name) + "'.");
  return it->second(value, args);
}

}  // namespace ls::tok::jinja
