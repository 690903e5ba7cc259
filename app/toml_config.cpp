#include "toml_config.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <memory>

#include <toml++/toml.h>

#include "error.h"

namespace ls::app {

namespace {

// What an option takes, from CLI11's type name ("UINT", "FLOAT", "TEXT", "INT:..."; flags take no value).
enum class Takes { flag, integer, unsigned_integer, number, text };

Takes takes(const CLI::Option& opt) {
  if (opt.get_expected_min() == 0) return Takes::flag;
  std::string type = opt.get_type_name();
  type = type.substr(0, type.find_first_of(": "));
  if (type == "UINT") return Takes::unsigned_integer;
  if (type == "INT") return Takes::integer;
  if (type == "FLOAT") return Takes::number;
  return Takes::text;
}

const char* describe(Takes t) {
  switch (t) {
    case Takes::flag: return "true or false";
    case Takes::integer: return "an integer";
    case Takes::unsigned_integer: return "a non-negative integer";
    case Takes::number: return "a number";
    case Takes::text: return "a string (or an array of strings, for a comma list)";
  }
  return "";
}

const char* type_of(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string shortest(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

std::vector<CLI::ConfigItem> TomlConfig::from_config(std::istream& input) const {
  std::string file = "--config file";
  if (config_option_->count() == 1) file = config_option_->results().front();
  const std::string text(std::istreambuf_iterator<char>(input), {});
  auto at = [&](const toml::source_region& where) {
    return file + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column) + ": ";
  };

  toml::table table;
  try {
    table = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw Error(at(e.source()) + "TOML syntax error: " + std::string(e.description()));
  }

  // In file order, so the first problem in the file is the one reported.
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto &x = a.first->source().begin, &y = b.first->source().begin;
    return std::pair(x.line, x.column) < std::pair(y.line, y.column);
  });

  std::vector<CLI::ConfigItem> result;
  std::map<std::string, std::string> seen;  // option name -> the key that set it
  for (const auto& [key_ptr, node_ptr] : entries) {
    const toml::key& key = *key_ptr;
    const toml::node& node = *node_ptr;
    const std::string where = at(key.source()), k(key.str());
    std::string name = k;
    std::replace(name.begin(), name.end(), '_', '-');
    if (node.is_table())
      throw Error(where + "\"" + k + "\" is a table; the file takes top-level keys only, named like the long options "
                  "(batch_size = 4)");
    const CLI::Option* opt = name.size() > 1 ? app_->get_option_no_throw("--" + name) : nullptr;
    if (!opt) throw Error(where + "unknown key \"" + k + "\" (there is no option --" + name + ")");
    if (!opt->get_configurable() || opt == config_option_)
      throw Error(where + "\"" + k + "\": --" + name + " cannot be set from a config file");
    if (auto [it, fresh] = seen.emplace(name, k); !fresh)
      throw Error(where + "\"" + k + "\" sets --" + name + ", which \"" + it->second + "\" already set");

    const Takes want = takes(*opt);
    std::string value;
    bool ok = true;
    if (auto b = node.as_boolean()) {
      ok = want == Takes::flag;
      value = b->get() ? "true" : "false";
    } else if (auto i = node.as_integer()) {
      ok = want != Takes::flag && (want != Takes::unsigned_integer || i->get() >= 0);
      value = std::to_string(i->get());
    } else if (auto f = node.as_floating_point()) {
      ok = want == Takes::number;
      value = shortest(f->get());
    } else if (auto s = node.as_string()) {
      ok = want == Takes::text;
      value = s->get();
    } else if (auto array = node.as_array()) {
      ok = want == Takes::text && array->is_homogeneous(toml::node_type::string);
      for (const auto& element : *array) {
        if (!element.is_string()) break;
        value += (value.empty() ? "" : ",") + element.as_string()->get();
      }
      if (!ok && want == Takes::text)
        throw Error(where + "\"" + k + "\": --" + name + " takes an array of strings only (a comma list)");
    } else {
      ok = false;
    }
    if (!ok)
      throw Error(where + "\"" + k + "\": --" + name + " takes " + describe(want) + ", not " + type_of(node) +
                  (want == Takes::unsigned_integer && node.is_integer() ? " below 0" : ""));

    CLI::ConfigItem item;
    item.name = name;
    item.inputs = {value};
    result.push_back(std::move(item));
  }
  return result;
}

std::string TomlConfig::to_config(const CLI::App* app, bool default_also, bool write_description,
                                  std::string prefix) const {
  return CLI::ConfigTOML().to_config(app, default_also, write_description, std::move(prefix));
}

CLI::Option* add_toml_config(CLI::App& app, const std::string& option_name, const std::string& help) {
  CLI::Option* opt = app.set_config(option_name, "", help);
  opt->type_name("FILE");
  app.config_formatter(std::make_shared<TomlConfig>(app, *opt));
  return opt;
}

}  // namespace ls::app
