#pragma once
#include <filesystem>
#include <string_view>

namespace ls {

// Writes `data` to `path` so that readers see either the old file or the new one, never a part:
// a temporary file beside it, fsync, rename, fsync of the directory. Throws ls::Error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view data);

// The same for a file written in pieces (one too big to build in memory): the bytes go to a temporary
// file beside `path` ("<path>.tmp.<pid>"); commit() fsyncs it, renames it into place and fsyncs the
// directory. Destroyed without commit() (an error on the way), it removes the temporary file and leaves
// `path` as it was. Every failure throws ls::Error naming `path`. Neither copied nor moved.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::filesystem::path& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void fail(const char* step);

  std::filesystem::path path_, tmp_;
  int fd_ = -1;
};

}  // namespace ls
