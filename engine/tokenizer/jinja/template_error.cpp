#include "tokenizer/jinja/template_error.h"

namespace ls::tok::jinja {

const char* python_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::syntax: return "TemplateSyntaxError";
    case ErrorKind::undefined: return "UndefinedError";
    case ErrorKind::security: return "SecurityError";
    case ErrorKind::raised: return "TemplateError";
    case ErrorKind::type: return "TypeError";
    case ErrorKind::value: return "ValueError";
    case ErrorKind::arithmetic: return "ArithmeticError";
    case ErrorKind::lookup: return "LookupError";
    case ErrorKind::runtime: return "TemplateRuntimeError";
    case ErrorKind::unsupported: return "unsupported";
  }
  return "Error";
}

void fail(ErrorKind kind, std::string message) { throw Failure{kind, std::move(message)}; }

namespace {
std::string place(const std::string& name, int line, int column) {
  return name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}
}  // namespace

TemplateError::TemplateError(ErrorKind kind, std::string message, std::string template_name, int line, int column)
    : Error(place(template_name, line, column) + message),
      kind_(kind),
      message_(std::move(message)),
      template_name_(std::move(template_name)),
      line_(line),
      column_(column) {}

}  // namespace ls::tok::jinja
