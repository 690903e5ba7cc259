#include "train/jsonl.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "error.h"

namespace ls::train {

namespace {

using nlohmann::json;

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says where and what.
std::string parse_problem(const std::exception& e) {
  std::string s = e.what();
  if (s.starts_with("[json.exception.")) {
    if (size_t close = s.find("] "); close != std::string::npos) s = s.substr(close + 2);
  }
  return s;
}

const std::string& string_field(const json& object, const char* key, const std::string& where, const std::string& what) {
  const auto& v = object.at(key);
  if (!v.is_string()) throw Error(where + ": " + what + " must be a string, got " + v.type_name());
  return v.get_ref<const std::string&>();
}

std::vector<tok::ChatMessage> parse_messages(const json& list, const std::string& where) {
  if (!list.is_array()) throw Error(where + ": \"messages\" must be an array, got " + list.type_name());
  if (list.empty()) throw Error(where + ": \"messages\" is empty");
  std::vector<tok::ChatMessage> messages;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name = "messages[" + std::to_string(i) + "]";
    const auto& m = list[i];
    if (!m.is_object()) throw Error(where + ": " + name + " must be an object, got " + m.type_name());
    for (const char* key : {"role", "content"})
      if (!m.contains(key)) throw Error(where + ": " + name + " has no \"" + key + "\"");
    const auto& role = string_field(m, "role", where, name + ".role");
    if (role != "system" && role != "user" && role != "assistant")
      throw Error(where + ": " + name + ".role \"" + role + "\" is not one of system, user, assistant");
    messages.push_back({role, string_field(m, "content", where, name + ".content")});
  }
  return messages;
}

}  // namespace

Record parse_record(std::string_view line, const std::string& where) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    throw Error(where + ": not valid JSON: " + parse_problem(e));
  }
  if (!j.is_object()) throw Error(where + ": expected a JSON object, got " + std::string(j.type_name()));

  const bool has_text = j.contains("text"), has_messages = j.contains("messages");
  const bool has_prompt = j.contains("prompt"), has_completion = j.contains("completion");
  const int formats = int(has_text) + int(has_messages) + int(has_prompt || has_completion);
  if (formats == 0)
    throw Error(where + ": no \"text\", \"prompt\"/\"completion\" or \"messages\" key (one of the three formats is needed)");
  if (formats > 1)
    throw Error(where + ": keys of more than one format (\"text\", \"prompt\"/\"completion\", \"messages\"); use one per line");

  Record r;
  if (has_text) {
    r.kind = RecordKind::text;
    r.text = string_field(j, "text", where, "\"text\"");
    if (r.text.empty()) throw Error(where + ": \"text\" is empty");
  } else if (has_messages) {
    r.kind = RecordKind::messages;
    r.messages = parse_messages(j["messages"], where);
  } else {
    if (!has_completion) throw Error(where + ": has \"prompt\" but no \"completion\"");
    if (!has_prompt) throw Error(where + ": has \"completion\" but no \"prompt\"");
    r.kind = RecordKind::prompt_completion;
    r.prompt = string_field(j, "prompt", where, "\"prompt\"");
    r.completion = string_field(j, "completion", where, "\"completion\"");
    if (r.completion.empty()) throw Error(where + ": \"completion\" is empty");
  }
  return r;
}

std::vector<Record> read_jsonl(const std::filesystem::path& path, bool skip_bad_lines, std::vector<LineError>* bad) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::vector<Record> records;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t\r\v\f") == std::string::npos) continue;
    try {
      records.push_back(parse_record(line, path.string() + ":" + std::to_string(number)));
      records.back().line = number;
    } catch (const Error& e) {
      if (!skip_bad_lines) throw;
      if (bad) bad->push_back({number, e.what()});
    }
  }
  if (in.bad()) throw Error(path.string() + ": read error");
  return records;
}

}  // namespace ls::train
