// StreamDecoder: the incremental detokenization of text-generation-inference. Each push decodes the
// ids since the last emitted text's start twice (without and with the new tail) and emits the
// difference once it ends in a complete character; the window keeps the decoder's view of the
// previous token (a leading space that Strip or Metaspace removes only at the start, say).
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace ls::tok {

StreamDecoder::StreamDecoder(const Tokenizer& t, bool skip_special_tokens)
    : tok_(&t), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  if (skip_special_ && tok_->is_special(id)) return "";
  ids_.push_back(id);
  // A run of <0xNN> tokens decodes as a whole (valid UTF-8 or one U+FFFD per byte): wait for its end.
  if (tok_->joins_with_next(id)) return "";
  return emit(false);
}

std::string StreamDecoder::flush() { return read_ < ids_.size() ? emit(true) : ""; }

std::string StreamDecoder::emit(bool final) {
  std::span<const int32_t> all(ids_);
  std::string before = tok_->decode(all.subspan(prefix_, read_ - prefix_));
  std::string now = tok_->decode(all.subspan(prefix_));
  // A U+FFFD at the end may be a character still missing bytes: hold it until more ids come.
  if (!final && (now.size() <= before.size() || now.ends_with(kReplacementChar))) return "";
  size_t common = 0;
  size_t limit = std::min(before.size(), now.size());
  while (common < limit && before[common] == now[common]) ++common;
  if (common < before.size()) {  // the new ids changed text already emitted: cannot take it back
    if (!final) return "";
    while (common > 0 && (static_cast<unsigned char>(now[common]) & 0xC0) == 0x80) --common;
  }
  std::string out = now.substr(common);
  prefix_ = read_;
  read_ = ids_.size();
  ids_.erase(ids_.begin(), ids_.begin() + std::ptrdiff_t(prefix_));
  read_ -= prefix_;
  prefix_ = 0;
  return out;
}

}  // namespace ls::tok
