#include "util/json_keys.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "error.h"

namespace ls {

using nlohmann::json;

std::optional<int64_t> json_integer(const json& v, int64_t lo, int64_t hi) {
  // (parsed text holds non-negative integers as unsigned; a json built in C++ may hold them as signed)
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    const int64_t i = int64_t(u);
    return i >= lo && i <= hi ? std::optional<int64_t>(i) : std::nullopt;
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t i = v.get<int64_t>();
  return i >= lo && i <= hi ? std::optional<int64_t>(i) : std::nullopt;
}

void JsonKeys::fail(const std::string& key, const std::string& problem) const {
  throw Error(where_ + ": \"" + key + "\" " + problem);
}

const json* JsonKeys::get(const std::string& key) const {
  auto it = j_.find(key);
  return it == j_.end() || it->is_null() ? nullptr : &*it;
}

uint32_t JsonKeys::positive_u32(const std::string& key) const {
  const json* v = get(key);
  if (!v) throw Error(where_ + ": missing required key \"" + key + "\"");
  return positive_u32(key, 0);
}

uint32_t JsonKeys::positive_u32(const std::string& key, uint32_t fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  const auto n = json_integer(*v, 1, std::numeric_limits<uint32_t>::max());
  if (!n) fail(key, "must be a positive integer, got " + v->dump());
  return uint32_t(*n);
}

uint32_t JsonKeys::u32(const std::string& key, uint32_t fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  const auto n = json_integer(*v, 0, std::numeric_limits<uint32_t>::max());
  if (!n) fail(key, "must be a non-negative integer, got " + v->dump());
  return uint32_t(*n);
}

uint32_t JsonKeys::u32_in(const std::string& key, uint32_t lo, uint32_t hi) const {
  const json* v = get(key);
  if (!v) throw Error(where_ + ": missing required key \"" + key + "\"");
  const auto n = json_integer(*v, lo, hi);
  if (!n) fail(key, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + v->dump());
  return uint32_t(*n);
}

float JsonKeys::positive_float(const std::string& key, double fallback) const {
  const json* v = get(key);
  if (!v) return float(fallback);
  if (!v->is_number() || !(v->get<double>() > 0) || !std::isfinite(v->get<double>()))
    fail(key, "must be a positive number, got " + v->dump());
  return float(v->get<double>());
}

float JsonKeys::number(const std::string& key) const {
  const json* v = get(key);
  if (!v) throw Error(where_ + ": missing required key \"" + key + "\"");
  if (!v->is_number() || !std::isfinite(v->get<double>())) fail(key, "must be a number, got " + v->dump());
  return float(v->get<double>());
}

double JsonKeys::finite(const std::string& key, double fallback, double limit) const {
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || std::fabs(v->get<double>()) > limit) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", limit);
    fail(key, std::string("must be a finite number, at most ") + bound + " in size, got " + v->dump());
  }
  return v->get<double>();
}

bool JsonKeys::boolean(const std::string& key, bool fallback) const {
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::string JsonKeys::string(const std::string& key) const {
  const json* v = get(key);
  if (!v) return "";
  if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

int32_t JsonKeys::token_id(const std::string& key, const json& v) const {
  const auto n = json_integer(v, 0, std::numeric_limits<int32_t>::max());
  if (!n) fail(key, "must hold token ids (non-negative integers), got " + v.dump());
  return int32_t(*n);
}

std::vector<int32_t> JsonKeys::token_ids(const std::string& key) const {
  std::vector<int32_t> ids;
  const json* v = get(key);
  if (!v) return ids;
  if (!v->is_array()) return {token_id(key, *v)};
  for (const json& id : *v) ids.push_back(token_id(key, id));
  return ids;
}

}  // namespace ls
