// A model folder's config.json (model/config.h): any JSON document, and bytes that are not JSON.
#include <nlohmann/json.hpp>

#include "error.h"
#include "fuzz_input.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto j = nlohmann::json::parse(ls::fuzz::as_text(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)ls::model::parse_config(j, "config.json");
  } catch (const ls::Error&) {
  }
  return 0;
}
