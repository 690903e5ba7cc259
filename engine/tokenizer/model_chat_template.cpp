#include "tokenizer/model_chat_template.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "error.h"

namespace ls::tok {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string() + ": cannot open");
  return {std::istreambuf_iterator<char>(f), {}};
}

nlohmann::json read_config(const fs::path& path) {
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(file + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(file + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(file + ": expected a JSON object, found " + j.type_name());
  return j;
}

// The config's "chat_template": a string, or the entry `name` of a list of {name, template}.
std::string config_template(const nlohmann::json& c, const std::string& file, const std::string& name) {
  if (c.is_string()) {
    if (name != "default") throw Error(file + ": has one chat template, not one named \"" + name + "\"");
    return c.get<std::string>();
  }
  if (!c.is_array())
    throw Error(file + ": \"chat_template\" is " + c.type_name() +
                " (expected a string or a list of {name, template})");
  std::string names, found;
  bool has = false;
  for (size_t i = 0; i < c.size(); ++i) {
    const auto& e = c[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
        !e["template"].is_string())
      throw Error(file + ": \"chat_template\"[" + std::to_string(i) +
                  "]: expected {\"name\": string, \"template\": string}");
    const std::string n = e["name"].get<std::string>();
    names += (names.empty() ? "" : ", ") + n;
    if (n == name) {
      found = e["template"].get<std::string>();
      has = true;
    }
  }
  if (!has)
    throw Error(file + ": \"chat_template\" lists templates without " +
                (name == "default" ? std::string("a \"default\" one") : "one named \"" + name + "\"") + " (" + names +
                ")");
  return found;
}

}  // namespace

std::optional<std::string> ModelChatTemplate::special_token(std::string_view name) const {
  for (const auto& [k, v] : special_tokens)
    if (k == name) return v;
  return std::nullopt;
}

ModelChatTemplate read_model_chat_template(const fs::path& path, const std::string& template_name) {
  const fs::path dir = path.parent_path();
  const fs::path jinja_file = dir / "chat_template.jinja",
                 named_file = dir / "additional_chat_templates" / (template_name + ".jinja");
  const bool config_exists = fs::exists(path);
  nlohmann::json j = config_exists || !fs::exists(jinja_file) ? read_config(path) : nlohmann::json::object();
  const std::string file = path.string();
  ModelChatTemplate t;
  t.source = file;
  if (template_name == "default" && fs::exists(jinja_file)) {
    t.jinja = read_file(jinja_file);
    t.source = jinja_file.string();
  } else if (template_name != "default" && fs::exists(named_file)) {
    t.jinja = read_file(named_file);
    t.source = named_file.string();
  } else if (j.contains("chat_template") && !j["chat_template"].is_null()) {
    t.jinja = config_template(j["chat_template"], file, template_name);
  } else if (template_name != "default") {
    throw Error(file + ": no chat template named \"" + template_name + "\"");
  }
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const auto& v = j[key];
    if (v.is_string())
      t.special_tokens.emplace_back(key, v.get<std::string>());
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
      t.special_tokens.emplace_back(key, v["content"].get<std::string>());
    else
      throw Error(file + ": \"" + key + "\" is " + v.type_name() + " (expected a string or {\"content\": string})");
  }
  return t;
}

}  // namespace ls::tok
