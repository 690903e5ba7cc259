#include "tokenizer/jinja/template.h"

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/renderer.h"

namespace ls::tok::jinja {

Template::Template(std::string_view source, std::string name)
    : name_(std::move(name)), body_(std::make_shared<const Body>(parse(tokenize(source, name_), name_))) {}

std::string Template::render(const Dict& variables) const { return render_body(*body_, variables, name_); }

}  // namespace ls::tok::jinja
