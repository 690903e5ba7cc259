#pragma once
// A whole file mapped read-only into memory (mmap, MAP_PRIVATE). Move-only; the mapping lives as long as
// the object, so spans into bytes() stay valid until it is destroyed (moving it keeps the same addresses).
// An empty file maps to an empty span. The file must not shrink while mapped (reads past its new end
// would fault); model files are not rewritten in place.
#include <cstddef>
#include <filesystem>
#include <span>

namespace ls {

class MappedFile {
 public:
  // Throws ls::Error naming the path when it cannot be opened, is not a regular file, or mmap fails.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void unmap() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ls
