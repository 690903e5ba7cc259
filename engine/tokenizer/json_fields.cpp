#include "tokenizer/json_fields.h"

#include "error.h"

namespace ls::tok {

Where Where::at(std::string_view key) const {
  return {file, path.empty() ? std::string(key) : path + "." + std::string(key)};
}

Where Where::at(size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }

void Where::fail(const std::string& problem) const {
  throw Error(file + ": " + (path.empty() ? "" : path + ": ") + problem);
}

const Json& member(const Json& obj, const char* key, const Where& w) {
  if (!obj.is_object()) w.fail("expected an object, found " + std::string(obj.type_name()));
  auto it = obj.find(key);
  if (it == obj.end()) w.fail(std::string("missing \"") + key + "\"");
  return *it;
}

const Json* optional_member(const Json& obj, const char* key, const Where& w) {
  if (!obj.is_object()) w.fail("expected an object, found " + std::string(obj.type_name()));
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string string_member(const Json& obj, const char* key, const Where& w) {
  const Json& v = member(obj, key, w);
  if (!v.is_string()) w.at(key).fail("expected a string, found " + std::string(v.type_name()));
  return v.get<std::string>();
}

bool bool_member(const Json& obj, const char* key, const Where& w, bool default_value) {
  const Json* v = optional_member(obj, key, w);
  if (!v) return default_value;
  if (!v->is_boolean()) w.at(key).fail("expected true or false, found " + std::string(v->type_name()));
  return v->get<bool>();
}

int64_t int_member(const Json& obj, const char* key, const Where& w, int64_t default_value) {
  const Json* v = optional_member(obj, key, w);
  if (!v) return default_value;
  if (!v->is_number_integer()) w.at(key).fail("expected an integer, found " + std::string(v->type_name()));
  return v->get<int64_t>();
}

std::string type_of(const Json& obj, const Where& w) { return string_member(obj, "type", w); }

}  // namespace ls::tok
