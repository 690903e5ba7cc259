#pragma once
// Helpers for the model-file tests: a temporary folder, raw file writing, and an assertion that a call
// throws ls::Error whose message holds given substrings (the file name and the problem).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "error.h"

namespace ls::test {

// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("ls_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Passes when f() throws ls::Error whose what() contains every part; the message is shown either way.
template <class F>
::testing::AssertionResult throws_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (std::string_view p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something other than ls::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

inline std::string hex_of(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

inline std::vector<std::byte> from_hex(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::vector<std::byte> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(std::byte(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  return out;
}

// The folder of committed fixtures (tests/fixtures), found from this header's own path.
inline std::filesystem::path fixtures_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures";
}

}  // namespace ls::test
