#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "error.h"

namespace ls {

namespace {
// Bytes left before the simulated full disk (simulate_full_disk_after); -1: no simulation.
std::atomic<int64_t> g_simulated_space{-1};

// ::write, except that it fails with ENOSPC past the simulated disk's end.
ssize_t write_some(int fd, const char* p, size_t n) {
  int64_t left = g_simulated_space.load();
  if (left < 0) return ::write(fd, p, n);
  if (left == 0) {
    errno = ENOSPC;
    return -1;
  }
  const size_t fits = std::min(n, size_t(left));
  const ssize_t done = ::write(fd, p, fits);
  if (done > 0) g_simulated_space.fetch_sub(done);
  return done;
}
}  // namespace

void simulate_full_disk_after(std::optional<uint64_t> bytes) {
  g_simulated_space = bytes ? int64_t(std::min<uint64_t>(*bytes, uint64_t(std::numeric_limits<int64_t>::max()))) : -1;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view data) {
  AtomicFileWriter file(path);
  file.write(data);
  file.commit();
}

AtomicFileWriter::AtomicFileWriter(const std::filesystem::path& path) : path_(path), tmp_(path) {
  tmp_ += ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("open");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::fail(const char* step) {
  const int err = errno;
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    fd_ = -1;
  }
  std::string message = path_.string() + ": cannot write (" + step + ": " + std::strerror(err) + ")";
  if (err == ENOSPC || err == EDQUOT || err == EFBIG)
    message += "; the disk is full (or the file is too large for it): free some space and try again";
  throw Error(message);
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(path_.string() + ": cannot write (the file is closed)");
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = write_some(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write");
    p += n;
    left -= size_t(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw Error(path_.string() + ": cannot write (the file is closed)");
  if (::fsync(fd_) != 0) fail("fsync");
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error(path_.string() + ": cannot write (rename: " + std::strerror(err) + ")");
  }
  std::filesystem::path dir = path_.parent_path().empty() ? "." : path_.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ls
