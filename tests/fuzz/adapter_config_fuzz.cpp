// A PEFT adapter folder's adapter_config.json (model/peft_adapter.h).
#include "error.h"
#include "fuzz_input.h"
#include "model/peft_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ls::fuzz::write_input(data, size, "adapter_config.json");
  try {
    (void)ls::model::read_peft_adapter_config(path.parent_path());
  } catch (const ls::Error&) {
  }
  return 0;
}
