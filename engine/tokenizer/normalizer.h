#pragma once
// tokenizer.json "normalizer": NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace and Sequence of
// them. Applied to each stretch of text between added tokens, as HF `tokenizers` does.
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"

namespace ls::tok {

class Normalizer {
 public:
  // `j` null: no normalizer. Throws ls::Error naming the file and the unsupported component.
  static Normalizer from_json(const Json& j, const Where& w);

  bool empty() const { return steps_.empty(); }
  // `s` is valid UTF-8.
  std::string apply(std::string_view s) const;

 private:
  enum class Kind { unicode, prepend, replace };
  struct Step {
    Kind kind;
    int unicode_options = 0;  // utf8proc_option_t for Kind::unicode
    bool compat = false;      // NFKC/NFKD: only ASCII is known to be unchanged
    bool compose = false;     // NFC/NFKC
    std::string text;         // Prepend: what to prepend; Replace: the replacement
    Pattern pattern;          // Replace
  };
  void add(const Json& j, const Where& w);

  std::vector<Step> steps_;
};

}  // namespace ls::tok
