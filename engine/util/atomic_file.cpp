#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "error.h"

namespace ls {

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
  throw Error(path_.string() + ": cannot write (" + step + ": " + std::strerror(err) + ")");
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(path_.string() + ": cannot write (the file is closed)");
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
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
