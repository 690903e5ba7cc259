#pragma once
// Shared by the fuzz targets (tests/fuzz/*_fuzz.cpp): the parsers under test read files, so each input is
// written to a file of this process's own folder first. Only ls::Error may leave a parser: any other
// exception escapes the target and libFuzzer reports it as a crash ("a clear error, never a crash").
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace ls::fuzz {

inline std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("lorastudio-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// The input as the file `name` in the scratch folder (replaced each call).
inline std::filesystem::path write_input(const uint8_t* data, size_t size, const std::string& name) {
  const auto path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace ls::fuzz
