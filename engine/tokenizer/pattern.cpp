#include "tokenizer/pattern.h"

namespace ls::tok {

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

Pattern Pattern::from_json(const Json& j, const Where& w) {
  if (j.is_object() && j.contains("String")) {
    return literal(string_member(j, "String", w));
  }
  if (j.is_object() && j.contains("Regex")) {
    Pattern p;
    p.regex_ = std::make_shared<const Regex>(string_member(j, "Regex", w), w.file + ": " + w.path);
    return p;
  }
  w.fail("expected {\"String\": ...} or {\"Regex\": ...}");
}

void Pattern::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  if (regex_) {
    regex_->find_all(s, out);
    return;
  }
  out.clear();
  if (literal_.empty()) return;
  for (size_t at = s.find(literal_); at != std::string_view::npos; at = s.find(literal_, at + literal_.size())) {
    out.emplace_back(at, at + literal_.size());
  }
}

}  // namespace ls::tok
