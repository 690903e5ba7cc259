#pragma once
// Token ids to printable text while generating: whole UTF-8 characters only (tok::StreamDecoder), and
// stop strings cut out. Text that might be the start of a stop string is held back until the next
// tokens show whether it is; a stop string is never printed.
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ls::infer {

class TextStream {
 public:
  TextStream(const tok::Tokenizer& tokenizer, std::vector<std::string> stop_strings);
  // Text that can be shown now (possibly empty). After a stop string appeared, stopped() is true and
  // nothing more is returned.
  std::string push(int32_t id);
  // The held-back rest at the end of generation (nothing if a stop string was met).
  std::string finish();
  bool stopped() const { return stopped_; }
  // Everything shown so far (the reply, without the stop string).
  const std::string& text() const { return shown_; }

 private:
  std::string release(bool at_end);
  const tok::Tokenizer& tokenizer_;
  tok::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  std::string pending_, shown_;
  bool stopped_ = false;
};

}  // namespace ls::infer
