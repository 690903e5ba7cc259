#pragma once
// tokenizer.json "added_tokens": tokens matched whole in the text before the model sees it, as HF
// `tokenizers` AddedVocabulary does: leftmost-longest, non-overlapping; the non-`normalized` ones in
// the raw text, the `normalized` ones in each normalized stretch between them; `single_word` drops a
// match touching a word character, `lstrip`/`rstrip` take the whitespace beside it into the match.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

// A stretch of the text: an added token's match (id >= 0) or the text between matches (id -1).
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is what matches `tokens[i]` (its content, normalized for the normalized set).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);

  bool empty() const { return tokens_.empty(); }
  // Cuts `text` into segments covering it (none for empty text).
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // token indices, longest pattern first
};

}  // namespace ls::tok
