#pragma once
// tokenizer.json "decoder": ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence of
// them, each with the decode_chain semantics of HF `tokenizers` (a list of token strings in, a list
// out; the final text is their concatenation). Without a decoder, tokens are joined with spaces.
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"

namespace ls::tok {

class Decoder {
 public:
  // `j` null: no decoder. Throws ls::Error naming the file and the unsupported component.
  static Decoder from_json(const Json& j, const Where& w);

  std::string decode(std::vector<std::string> tokens) const;
  // True when a ByteFallback step joins runs of <0xNN> tokens into characters.
  bool has_byte_fallback() const;

 private:
  enum class Kind { byte_level, replace, byte_fallback, fuse, strip, metaspace };
  struct Step {
    Kind kind;
    Pattern pattern;          // replace
    std::string content;      // replace: the replacement; strip: the character; metaspace: the replacement
    size_t start = 0, stop = 0;  // strip: how many characters to remove at most from each end
    bool prepend = true;      // metaspace: prepend_scheme is not "never"
  };
  void add(const Json& j, const Where& w);
  void apply(const Step& step, std::vector<std::string>& tokens) const;

  bool present_ = false;
  std::vector<Step> steps_;
};

}  // namespace ls::tok
