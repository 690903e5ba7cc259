#pragma once
// The "pattern" of Split, Replace (normalizer and decoder): {"String": "..."} matches the literal
// text, {"Regex": "..."} a regular expression (regex.h).
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"

namespace ls::tok {

class Pattern {
 public:
  static Pattern literal(std::string text);
  static Pattern from_json(const Json& j, const Where& w);

  // Non-overlapping matches in `s`, leftmost first, as [begin, end) byte offsets.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // null for a literal
};

}  // namespace ls::tok
