#include "template_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "error.h"
#include "tokenizer/apply_chat_template.h"
#include "tokenizer/model_chat_template.h"

namespace ls::app {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // keeps the keys' order, as Python's json.load does (tojson shows it)

void add_template_options(CLI::App& cmd, TemplateArgs& a) {
  auto* model = cmd.add_option("--model", a.model,
                               "a model folder: its chat template (chat_template.jinja, else tokenizer_config.json's "
                               "chat_template) and special tokens (bos_token, eos_token, ...)")
                    ->type_name("DIR");
  auto* file = cmd.add_option("--template", a.template_file, "a Jinja chat template file instead")->type_name("FILE");
  model->excludes(file);
  cmd.add_option("--messages", a.messages,
                 "the conversation: a JSON list of messages ({\"role\": ..., \"content\": ..., \"tool_calls\": ...}), "
                 "or an object with \"messages\" (and \"tools\")")
      ->type_name("FILE")
      ->required();
  cmd.add_option("--tools", a.tools, "a JSON list of tool schemas, passed as `tools` (default: none)")
      ->type_name("FILE");
  cmd.add_flag("--add-generation-prompt", a.add_generation_prompt,
               "end with the header of the assistant's next turn, as for generation");
  cmd.add_option("--var", a.vars,
                 "a template variable, its value in JSON: --var enable_thinking=false --var 'bos_token=\"<s>\"'; "
                 "repeatable, overrides the model's special tokens")
      ->type_name("NAME=JSON");
  cmd.add_option("--template-name", a.template_name,
                 "with --model: which of the folder's named chat templates (tokenizer_config.json's list, or "
                 "additional_chat_templates/NAME.jinja)")
      ->type_name("NAME")
      ->capture_default_str();
}

namespace {

Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  try {
    return Json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

int run_template(const TemplateArgs& a) {
  if (a.model.empty() == a.template_file.empty()) throw Error("template: give --model DIR or --template FILE");
  if (!a.template_file.empty() && a.template_name != "default")
    throw Error("template: --template-name picks among a model folder's templates (--model)");
  std::string source, source_name;
  tok::ChatTemplateCall call;
  if (!a.model.empty()) {
    const auto m = tok::read_model_chat_template(fs::path(a.model) / "tokenizer_config.json", a.template_name);
    if (m.jinja.empty())
      throw Error(a.model +
                  ": no chat template (no chat_template.jinja, and tokenizer_config.json has no chat_template)");
    source = m.jinja;
    source_name =
        m.source.ends_with(".jinja") ? m.source : m.source + ": chat_template";  // lines count in the template
    call.special_tokens = m.special_tokens;
  } else {
    source = read_text(a.template_file);
    source_name = a.template_file;
  }

  const Json messages = read_json_file(a.messages);
  if (messages.is_array()) {
    call.messages = tok::jinja::Value::from_json(messages);
  } else if (messages.is_object() && messages.contains("messages") && messages["messages"].is_array()) {
    call.messages = tok::jinja::Value::from_json(messages["messages"]);
    if (messages.contains("tools")) call.tools = tok::jinja::Value::from_json(messages["tools"]);
  } else {
    throw Error(a.messages + ": expected a list of messages, or an object with \"messages\"");
  }
  if (!a.tools.empty()) call.tools = tok::jinja::Value::from_json(read_json_file(a.tools));
  call.add_generation_prompt = a.add_generation_prompt;
  for (const auto& v : a.vars) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--var " + v + ": expected NAME=JSON");
    Json value;
    try {
      value = Json::parse(v.substr(eq + 1));
    } catch (const std::exception&) {
      throw Error("--var " + v + ": the value is not JSON (a string needs quotes: " + v.substr(0, eq) + "='\"text\"')");
    }
    call.extra.set(tok::jinja::Value(v.substr(0, eq)), tok::jinja::Value::from_json(value));
  }

  const tok::jinja::Template t(source, source_name);
  const std::string text = tok::apply_chat_template(t, call);
  std::cout.write(text.data(), std::streamsize(text.size()));
  std::cout.flush();
  return 0;
}

}  // namespace ls::app
