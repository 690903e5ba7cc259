// The safetensors header and data offsets of an arbitrary file (model/safetensors.h).
#include "error.h"
#include "fuzz_input.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "model.safetensors");
  try {
    const auto st = ls::model::SafeTensors::open(path);
    uint64_t total = 0;
    for (const auto& t : st.tensors()) total += t.numel() + t.name.size();
    for (const auto& [k, v] : st.metadata()) total += k.size() + v.size();
    (void)total;
  } catch (const ls::Error&) {
  }
  return 0;
}
