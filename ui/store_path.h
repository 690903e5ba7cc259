#pragma once
#include <filesystem>

namespace ls::ui {

// `path`, or where it is empty the run store the GUI, --batch and the commands share
// (store::default_store_path()).
std::filesystem::path store_path_or_default(const std::filesystem::path& path);

}  // namespace ls::ui
