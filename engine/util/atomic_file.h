#pragma once
#include <filesystem>
#include <string_view>

namespace ls {

// Writes `data` to `path` so that readers see either the old file or the new one, never a part:
// a temporary file beside it, fsync, rename, fsync of the directory. Throws ls::Error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view data);

}  // namespace ls
