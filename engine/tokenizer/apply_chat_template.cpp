#include "tokenizer/apply_chat_template.h"

namespace ls::tok {

jinja::Dict chat_template_variables(const ChatTemplateCall& call) {
  jinja::Dict v;
  v.set(jinja::Value("messages"), call.messages);
  v.set(jinja::Value("tools"), call.tools);
  v.set(jinja::Value("documents"), jinja::Value(nullptr));
  v.set(jinja::Value("add_generation_prompt"), jinja::Value(call.add_generation_prompt));
  for (const auto& [name, text] : call.special_tokens) v.set(jinja::Value(name), jinja::Value(text));
  for (const auto& [name, value] : call.extra.items) v.set(name, value);
  return v;
}

std::string apply_chat_template(const jinja::Template& t, const ChatTemplateCall& call) {
  return t.render(chat_template_variables(call));
}

}  // namespace ls::tok
