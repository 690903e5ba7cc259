// Dataset lines (train/jsonl.h): each line of the input as one JSONL record.
#include <string>

#include "error.h"
#include "fuzz_input.h"
#include "train/jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = ls::fuzz::as_text(data, size);
  size_t line = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view one = text.substr(0, end);
    ++line;
    try {
      (void)ls::train::parse_record(one, "data.jsonl:" + std::to_string(line));
    } catch (const ls::Error&) {
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return 0;
}
