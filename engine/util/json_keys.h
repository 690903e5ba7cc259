#pragma once
// Checked reads of JSON values for the small JSON files of a model folder and an adapter (config.json,
// generation_config.json, adapter_config.json, tokenizer files): every number is checked for its kind and range
// before it is converted, because nlohmann converts a float such as 1e48 to an integer without a check, which is
// undefined behaviour (adapter_config_fuzz found it, session 26); every error names the file and the key.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ls {

// v as a whole number in [lo, hi]; nothing when it is of another kind (a float, a string, ...) or out of range.
std::optional<int64_t> json_integer(const nlohmann::json& v, int64_t lo, int64_t hi);

// Typed access to one JSON object's keys, with errors "<where>: "<key>" <problem>". A key set to null counts as
// absent, as it does for transformers' configs. `j` must outlive this.
class JsonKeys {
 public:
  JsonKeys(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const nlohmann::json* get(const std::string& key) const;
  bool has(const std::string& key) const { return get(key) != nullptr; }

  uint32_t positive_u32(const std::string& key) const;  // required
  uint32_t positive_u32(const std::string& key, uint32_t fallback) const;
  uint32_t u32(const std::string& key, uint32_t fallback) const;  // any non-negative integer
  uint32_t u32_in(const std::string& key, uint32_t lo, uint32_t hi) const;  // required, a whole number in [lo, hi]
  float positive_float(const std::string& key, double fallback) const;
  float number(const std::string& key) const;  // required, any finite number
  // A finite number no larger than `limit` in magnitude (a bound on what a sane file holds).
  double finite(const std::string& key, double fallback, double limit) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;  // "" when absent
  int32_t token_id(const std::string& key, const nlohmann::json& v) const;  // v: the key's value or one of its list
  std::vector<int32_t> token_ids(const std::string& key) const;  // one id or a list of them; none when absent

 private:
  const nlohmann::json& j_;
  std::string where_;
};

}  // namespace ls
