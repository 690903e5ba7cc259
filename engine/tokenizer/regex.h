#pragma once
// Regular expressions of tokenizer.json, run by PCRE2 (UTF, UCP, JIT when available). HF `tokenizers`
// runs them with Oniguruma; the pattern is translated where the two read it differently: Oniguruma's
// \s is Unicode White_Space, which holds U+0085 (NEL) that PCRE2's \s lacks, and its \h is a hex digit.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ls::tok {

class Regex {
 public:
  // Throws ls::Error "<where>: cannot compile regex /pattern/: <PCRE2's message> at offset N".
  Regex(std::string_view pattern, const std::string& where);
  ~Regex();
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches in `s` (valid UTF-8; nothing before or after it is visible), leftmost
  // first, as [begin, end) byte offsets; an empty match right after another is skipped as in the
  // `onig` crate's find_iter. Safe to call from several threads.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;   // as written in the file
  void* code_ = nullptr;  // pcre2_code_8
};

// The pattern with Oniguruma's \s, \S, \h, \H spelled for PCRE2 (exposed for tests).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace ls::tok
