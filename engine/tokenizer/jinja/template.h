#pragma once
// A Jinja template as transformers runs chat templates: jinja2's ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the loopcontrols extension ({% break %}, {% continue %}), its
// {% generation %} block, raise_exception(), strftime_now() and json.dumps as `tojson`. Values are
// Python's (value.h); rendering prints them as Python's str() does ({{ true }} is "True"). A template
// cannot read files or run anything: include, import, extends and block are refused when parsed.
//
//   Template t(source, "tokenizer_config.json");             // throws TemplateError on a syntax error
//   std::string text = t.render(variables);                   // a Dict: messages, add_generation_prompt, ...
//
// Every error is a TemplateError (template_error.h): the template's name, line and column, and jinja2's
// message (raise_exception's verbatim).
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

class Template {
 public:
  Template(std::string_view source, std::string name);
  std::string render(const Dict& variables) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const Body> body_;
};

}  // namespace ls::tok::jinja
