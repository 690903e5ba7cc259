#include "tokenizer/added_vocabulary.h"

#include <utf8proc.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

// Rust regex's \w: Alphabetic, marks, decimal digits, connector punctuation, joiners. Alphabetic is
// letters, letter numbers and Other_Alphabetic, whose members outside the marks are the circled and
// squared Latin letters (utf8proc has no Alphabetic property).
bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189)) {
    return true;
  }
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// Rust regex's \s: the White_Space property.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point that ends at byte `end` of valid UTF-8 `s` (end > 0).
char32_t code_point_before(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return next_code_point(s, b);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    if (patterns_[i].empty()) continue;
    by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return patterns_[a].size() > patterns_[b].size(); });
  }
}

void AddedTokenMatcher::split(std::string_view s, std::vector<Segment>& out) const {
  out.clear();
  if (s.empty()) return;
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    // Leftmost-longest: the first position where any pattern matches, the longest one there.
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(s[pos])];
    int64_t found = -1;
    for (uint32_t k : candidates) {
      if (s.compare(pos, patterns_[k].size(), patterns_[k]) == 0) {
        found = k;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[size_t(found)];
    size_t start = pos, stop = pos + patterns_[size_t(found)].size();
    pos = stop;  // the search goes on after this match even when single_word discards it
    if (t.single_word) {
      bool start_space = start == 0 || !is_word_char(code_point_before(s, start));
      size_t after = stop;
      bool stop_space = stop == s.size() || !is_word_char(next_code_point(s, after));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      size_t b = start;
      while (b > 0) {
        size_t prev = b - 1;
        while (prev > 0 && (static_cast<unsigned char>(s[prev]) & 0xC0) == 0x80) --prev;
        size_t tmp = prev;
        if (!is_white_space(next_code_point(s, tmp))) break;
        b = prev;
      }
      start = std::max(b, start_offset);
    }
    if (t.rstrip) {
      while (stop < s.size()) {
        size_t next = stop;
        if (!is_white_space(next_code_point(s, next))) break;
        stop = next;
      }
      pos = stop;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset != s.size()) out.push_back({start_offset, s.size(), -1});
}

}  // namespace ls::tok
