#pragma once
#include <ctime>
#include <string>

namespace ls {

// Time t in the local time zone, formatted by strftime's `format` (at most 63 characters of output).
std::string local_time(std::time_t t, const char* format);

// The local date and time as YYYYMMDD-HHMMSS: the stamp in default run and export folder names.
std::string local_stamp();

}  // namespace ls
