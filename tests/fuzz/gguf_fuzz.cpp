// A GGUF file (model/gguf_reader.h): header, metadata of every value type, tensor infos and offsets.
#include "error.h"
#include "fuzz_input.h"
#include "model/gguf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "model.gguf");
  try {
    const auto reader = ls::gguf::Reader::open(path);
    uint64_t sum = 0;
    for (const auto& t : reader.tensors()) {
      sum += t.name.size() + t.bytes.size();
      for (auto n : t.ne) sum += n;
      if (!t.bytes.empty()) sum += uint8_t(t.bytes.back());
    }
    (void)sum;
  } catch (const ls::Error&) {
  }
  return 0;
}
