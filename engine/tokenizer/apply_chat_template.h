#pragma once
// A chat template rendered as transformers' apply_chat_template(conversation, tools=..., tokenize=False,
// add_generation_prompt=..., **kwargs) renders it: the template gets messages, tools (None when not
// given), documents=None, add_generation_prompt, the tokenizer's special tokens (bos_token, eos_token, ...)
// and the extra arguments, which come last and override.
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/template.h"

namespace ls::tok {

struct ChatTemplateCall {
  jinja::Value messages = jinja::Value(jinja::List{});  // a list of {"role": ..., "content": ...}
  jinja::Value tools = jinja::Value(nullptr);           // None, or a list of tool schemas
  bool add_generation_prompt = false;
  std::vector<std::pair<std::string, std::string>> special_tokens;
  jinja::Dict extra;  // enable_thinking, date_string, ...
};

jinja::Dict chat_template_variables(const ChatTemplateCall& call);
// Throws jinja::TemplateError.
std::string apply_chat_template(const jinja::Template& t, const ChatTemplateCall& call);

}  // namespace ls::tok
