#pragma once
// `lorastudio template`: what a conversation becomes under a chat template, exactly as transformers'
// apply_chat_template(tokenize=False) renders it.
//   template (--model DIR | --template FILE.jinja) --messages FILE.json [--tools FILE.json]
//            [--add-generation-prompt] [--var NAME=JSON ...] [--template-name NAME]
// prints the rendered text to stdout byte for byte (nothing added, not even a newline), or the template's
// error (raise_exception's message, or the problem with the template's line and column) on stderr with
// exit code 1. With --model the template and the special tokens (bos_token, eos_token, ...) come from the
// folder (chat_template.jinja or tokenizer_config.json, tokenizer/model_chat_template.h); --var sets any
// template variable (enable_thinking=false, bos_token="<s>", date_string="26 Jul 2024") and wins.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ls::app {

struct TemplateArgs {
  std::string model, template_file, messages, tools, template_name = "default";
  bool add_generation_prompt = false;
  std::vector<std::string> vars;  // NAME=JSON
};

void add_template_options(CLI::App& cmd, TemplateArgs& args);
// Returns the exit code: 0 rendered; errors (the template's included) throw ls::Error.
int run_template(const TemplateArgs& args);

}  // namespace ls::app
