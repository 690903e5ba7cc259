#pragma once
// Every failure the engine can meet on input or on the device throws ls::Error with a message that
// names what failed and where (file, tensor, op, shapes). The app boundary prints it in one line.
#include <stdexcept>
#include <string>

namespace ls {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace ls
