#pragma once
// The double a float setting was written as: the shortest decimal that reads back as the float, read in
// double (0.9f -> 0.9, not 0.89999997615814209). Python tools keep such settings as doubles; using this
// value where they compute in double (bias corrections, schedules, JSON configs) gives their numbers.
#include <charconv>

namespace ls {

inline double decimal_double(float f) {
  char text[64];
  auto written = std::to_chars(text, text + sizeof text, f);  // shortest round-trip form
  double d = 0;
  std::from_chars(text, written.ptr, d);  // locale-independent; "inf" and "nan" read back too
  return d;
}

}  // namespace ls
