#pragma once
#include <string>

namespace ls {

// The local date and time as YYYYMMDD-HHMMSS: the stamp in default run and export folder names.
std::string local_stamp();

}  // namespace ls
