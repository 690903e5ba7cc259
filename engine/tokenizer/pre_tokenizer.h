#pragma once
// tokenizer.json "pre_tokenizer": Split (regex or literal; behaviors Isolated, Removed,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel (GPT-2 regex when use_regex,
// add_prefix_space, then bytes -> GPT-2 alphabet), Metaspace (prepend_scheme always/first/never, split)
// and Sequence of them. Cuts normalized text into the words the model tokenizes one by one.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"

namespace ls::tok {

struct Piece {
  std::string text;
  bool at_input_start = false;  // begins at offset 0 of the input (Metaspace's prepend_scheme "first")
};

class PreTokenizer {
 public:
  // `j` null: the whole text is one word. Throws ls::Error naming the file and unsupported component.
  static PreTokenizer from_json(const Json& j, const Where& w);

  // Replaces `pieces` with their pre-tokenized words (empty words dropped, as HF does).
  void apply(std::vector<Piece>& pieces) const;

 private:
  enum class Kind { split, byte_level, metaspace };
  enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
  enum class Prepend { always, first, never };
  struct Step {
    Kind kind;
    Pattern pattern;            // split; byte_level with use_regex (GPT-2's regex); metaspace: the replacement
    bool use_pattern = true;    // byte_level: use_regex
    Behavior behavior = Behavior::isolated;
    bool invert = false;
    bool add_prefix_space = false;  // byte_level
    std::string replacement;        // metaspace ("▁")
    Prepend prepend = Prepend::always;
  };
  void add(const Json& j, const Where& w);
  void split(const Step& step, const Piece& piece, std::vector<Piece>& out) const;

  std::vector<Step> steps_;
};

}  // namespace ls::tok
