#pragma once
// Errors of the Jinja engine. Inside the engine a failure is thrown as a Failure (what Python would
// raise, without a place); the renderer turns it into a TemplateError naming the template, the line and
// the column of the expression or statement that failed. raise_exception(msg) gives ErrorKind::raised
// and the message verbatim.
#include <string>

#include "error.h"

namespace ls::tok::jinja {

// The Python exception jinja2 would raise, by family.
enum class ErrorKind {
  syntax,       // TemplateSyntaxError (and TemplateAssertionError: unknown filter or test)
  undefined,    // UndefinedError: using an undefined value
  security,     // SecurityError: an unsafe attribute or call in the sandbox
  raised,       // TemplateError from raise_exception(message)
  type,         // TypeError
  value,        // ValueError (and FilterArgumentError)
  arithmetic,   // ZeroDivisionError, OverflowError
  lookup,       // IndexError, KeyError
  runtime,      // TemplateRuntimeError and anything else
  unsupported,  // what this engine refuses: include, import, extends, ...
};

// The Python class name of a kind ("UndefinedError", "TypeError", ...), for messages and tests.
const char* python_name(ErrorKind kind);

struct Failure {
  ErrorKind kind;
  std::string message;
};

[[noreturn]] void fail(ErrorKind kind, std::string message);

class TemplateError : public Error {
 public:
  TemplateError(ErrorKind kind, std::string message, std::string template_name, int line, int column);
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }  // without the place
  const std::string& template_name() const { return template_name_; }
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  ErrorKind kind_;
  std::string message_, template_name_;
  int line_, column_;
};

}  // namespace ls::tok::jinja
