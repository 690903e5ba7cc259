#include "ui/store_path.h"

#include "store/run_store.h"

namespace ls::ui {

std::filesystem::path store_path_or_default(const std::filesystem::path& path) {
  return path.empty() ? store::default_store_path() : path;
}

}  // namespace ls::ui
