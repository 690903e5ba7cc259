#pragma once
// Reading tokenizer.json components with errors that say where: "<file>: <component path>: <problem>",
// e.g. `/m/tokenizer.json: pre_tokenizer.pretokenizers[1]: unsupported type "Digits"`.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ls::tok {

using Json = nlohmann::json;

struct Where {
  std::string file;  // the file's path
  std::string path;  // the component inside it, e.g. "model.merges[12]"

  Where at(std::string_view key) const;
  Where at(size_t index) const;
  [[noreturn]] void fail(const std::string& problem) const;
};

// obj[key]; fails if obj is not an object or has no such key.
const Json& member(const Json& obj, const char* key, const Where& w);
// obj[key] if present and not null, else nullptr.
const Json* optional_member(const Json& obj, const char* key, const Where& w);
std::string string_member(const Json& obj, const char* key, const Where& w);
bool bool_member(const Json& obj, const char* key, const Where& w, bool default_value);
int64_t int_member(const Json& obj, const char* key, const Where& w, int64_t default_value);
// The component's "type" string.
std::string type_of(const Json& obj, const Where& w);

}  // namespace ls::tok
