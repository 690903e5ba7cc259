#include "infer/text_stream.h"

#include <algorithm>

namespace ls::infer {

TextStream::TextStream(const tok::Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : tokenizer_(tokenizer), decoder_(tokenizer, true), stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return {};
  // Special tokens are not shown, but one that is a stop string (e.g. <|im_end|>) ends the stream.
  if (tokenizer_.is_special(id) &&
      std::find(stops_.begin(), stops_.end(), std::string(tokenizer_.token(id))) != stops_.end()) {
    std::string out = pending_ + decoder_.flush();
    pending_.clear();
    stopped_ = true;
    shown_ += out;
    return out;
  }
  pending_ += decoder_.push(id);
  return release(false);
}

std::string TextStream::finish() {
  if (stopped_) return {};
  pending_ += decoder_.flush();
  return release(true);
}

std::string TextStream::release(bool at_end) {
  // The earliest stop string in the pending text ends the stream.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    stopped_ = true;
    shown_ += out;
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  if (!at_end) {
    for (const auto& s : stops_)
      for (size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n)
        if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  shown_ += out;
  return out;
}

}  // namespace ls::infer
