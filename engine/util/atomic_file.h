#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace ls {

// Writes `data` to `path` so that readers see either the old file or the new one, never a part:
// a temporary file beside it, fsync, rename, fsync of the directory. Throws ls::Error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view data);

// The same for a file written in pieces (one too big to build in memory): the bytes go to a temporary
// file beside `path` ("<path>.tmp.<pid>"); commit() fsyncs it, renames it into place and fsyncs the
// directory. Destroyed without commit() (an error on the way), it removes the temporary file and leaves
// `path` as it was. Every failure throws ls::Error naming `path`. Neither copied nor moved.
// A write that fails for want of space (ENOSPC, EDQUOT, EFBIG) says so in its message.
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

// Test hook for the disk-full tests (docs/reliability.md "A full disk"): once `bytes` more bytes have gone
// through AtomicFileWriter (and so write_file_atomically) in this process, every write fails with ENOSPC, as
// on a full disk, the last one after writing what still fitted. std::nullopt (the default) turns it off.
void simulate_full_disk_after(std::optional<uint64_t> bytes);

}  // namespace ls
