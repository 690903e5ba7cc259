// tokenizer.json (tokenizer/tokenizer.h): the file itself, then a fixed text through what it built.
#include "error.h"
#include "fuzz_input.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "tokenizer.json");
  try {
    const auto tok = ls::tok::Tokenizer::load(path);
    const auto ids = tok.encode("Hello, world! 123 \xc3\xa9t\xc3\xa9 <|im_end|>\n  x", true);
    (void)tok.decode(ids);
  } catch (const ls::Error&) {
  }
  return 0;
}
