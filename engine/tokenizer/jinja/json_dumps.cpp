#include "tokenizer/jinja/json_dumps.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/utf8.h"

namespace ls::tok::jinja {

namespace {

void append_hex4(std::string& out, uint32_t u) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int k = 3; k >= 0; --k) out += kHex[(u >> (4 * k)) & 0xF];
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c > 0x7F)) {
          if (c > 0xFFFF) {
            append_hex4(out, 0xD800 + ((c - 0x10000) >> 10));
            append_hex4(out, 0xDC00 + ((c - 0x10000) & 0x3FF));
          } else {
            append_hex4(out, c);
          }
        } else {
          append_utf8(out, c);
        }
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

// A dict key as json.dumps writes it.
std::string key_text(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::string: return k.as_string();
    case Value::Kind::boolean: return k.as_bool() ? "true" : "false";
    case Value::Kind::none: return "null";
    case Value::Kind::integer: return std::to_string(k.as_int());
    case Value::Kind::floating: return float_json(k.as_float());
    default: fail(ErrorKind::type, "keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

class Writer {
 public:
  explicit Writer(const JsonDumpOptions& o) : o_(o) {}
  std::string out;

  void write(const Value& v, int depth) {
    switch (v.kind()) {
      case Value::Kind::none: out += "null"; return;
      case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::integer: out += std::to_string(v.as_int()); return;
      case Value::Kind::floating: out += float_json(v.as_float()); return;
      case Value::Kind::string: append_json_string(out, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::list:
        if (v.sequence_style() <= Sequence::tuple) {
          write_list(v.as_list(), depth);
          return;
        }
        break;
      case Value::Kind::dict: write_dict(v.as_dict(), depth); return;
      default: break;
    }
    fail(ErrorKind::type, "Object of type " + v.type_name() + " is not JSON serializable");
  }

 private:
  const JsonDumpOptions& o_;

  void newline(int depth) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *o_.indent;
  }

  void write_list(const List& items, int depth) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o_.item_separator;
      newline(depth + 1);
      write(items[i], depth + 1);
    }
    newline(depth);
    out += ']';
  }

  void write_dict(const Dict& d, int depth) {
    if (d.items.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& kv : d.items) items.push_back(&kv);
    if (o_.sort_keys)
      std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return py_less(a->first, b->first); });
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o_.item_separator;
      newline(depth + 1);
      append_json_string(out, key_text(items[i]->first), o_.ensure_ascii);
      out += o_.key_separator;
      write(items[i]->second, depth + 1);
    }
    newline(depth);
    out += '}';
  }
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Writer w(options);
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace ls::tok::jinja
