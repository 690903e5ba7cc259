#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "error.h"

namespace ls {

void write_file_atomically(const std::filesystem::path& path, std::string_view data) {
  auto fail = [&](const char* step) {
    throw Error(path.string() + ": cannot write (" + step + ": " + std::strerror(errno) + ")");
  };
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open");
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { ::close(fd); ::unlink(tmp.c_str()); fail("write"); }
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd) != 0) { ::close(fd); ::unlink(tmp.c_str()); fail("fsync"); }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) { ::unlink(tmp.c_str()); fail("rename"); }
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { ::fsync(dfd); ::close(dfd); }
}

}  // namespace ls
