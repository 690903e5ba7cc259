#pragma once
// A whole JSON file parsed (nlohmann::json), for the model folder's small files.
#include <filesystem>
#include <nlohmann/json.hpp>

namespace ls {

// Throws ls::Error naming the path when it cannot be read, or "<path>: not valid JSON (<parser's words>)".
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace ls
