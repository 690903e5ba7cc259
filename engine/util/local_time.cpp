#include "util/local_time.h"

namespace ls {

std::string local_time(std::time_t t, const char* format) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, format, &tm);
  return std::string(buf, n);
}

std::string local_stamp() { return local_time(std::time(nullptr), "%Y%m%d-%H%M%S"); }

}  // namespace ls
