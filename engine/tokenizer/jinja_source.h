#pragma once
// What chat template recognition reads from a Jinja source without running it: the values of its
// string literals and a fingerprint of its text. Outside tags the source is output text; inside
// {{ ... }} and {% ... %} string literals are '...' or "..." with backslash escapes, read as jinja2
// reads them (Python's unicode-escape: \n, \t, \\, \', \", \xhh, \uXXXX, ...); {# ... #} is a comment.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

struct JinjaSource {
  std::vector<std::string> literals;  // unescaped values of the string literals, in source order
  // FNV-1a 64 of the source with every literal rewritten in one quoting ("..." with \\, \", \n
  // escapes): templates that differ only in how they quote or escape the same strings (a real newline
  // or \n inside a literal, '...' or "...") get the same fingerprint.
  uint64_t fingerprint = 0;
};

// Never fails: an unterminated tag or literal ends at the end of the source.
JinjaSource scan_jinja(std::string_view source);

}  // namespace ls::tok
