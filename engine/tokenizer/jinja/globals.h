#pragma once
// The global names a chat template sees besides its variables: jinja2's range, dict, namespace and
// joiner, and transformers' raise_exception(message) and strftime_now(format) (the local time).
// range() is capped at 100000 items as in the sandbox.
#include <optional>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace ls::tok::jinja {

std::optional<Value> global(std::string_view name);

}  // namespace ls::tok::jinja
