#include "util/json_file.h"

#include "error.h"
#include "util/mapped_file.h"

namespace ls {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const MappedFile file(path);
  const char* text = reinterpret_cast<const char*>(file.bytes().data());
  try {
    return nlohmann::json::parse(text, text + file.size());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace ls
