// tokenizer_config.json's chat template (tokenizer/chat_template.h): reading the file, recognising or
// parsing the template with the Jinja engine, and rendering a short conversation with it.
#include <vector>

#include "error.h"
#include "fuzz_input.h"
#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "tokenizer_config.json");
  try {
    std::vector<std::string> warnings;
    const auto tmpl = ls::tok::ChatTemplate::from_tokenizer_config(path, &warnings);
    const std::vector<ls::tok::ChatMessage> messages = {
        {.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hi"}, {.role = "assistant", .content = "Hello"}};
    (void)tmpl.render_text(messages, true);
  } catch (const ls::Error&) {
  }
  return 0;
}
