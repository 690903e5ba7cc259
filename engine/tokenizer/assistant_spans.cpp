#include "tokenizer/assistant_spans.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "error.h"
#include "tokenizer/py_str.h"

namespace ls::tok {

namespace {

// The offset just past the first end-of-turn text found in s at or after `from`, or npos.
size_t end_of_first_stop(std::string_view s, size_t from, std::span<const std::string> stops) {
  size_t best = std::string_view::npos;
  for (const auto& stop : stops) {
    if (stop.empty()) continue;
    const size_t at = s.find(stop, from);
    if (at != std::string_view::npos && (best == std::string_view::npos || at + stop.size() < best))
      best = at + stop.size();
  }
  return best;
}

size_t common_prefix(std::string_view a, std::string_view b) {
  return size_t(std::mismatch(a.begin(), a.begin() + std::ptrdiff_t(std::min(a.size(), b.size())), b.begin()).first -
                a.begin());
}

// The last line of `s` that has text, with the newlines that end `s`.
std::string_view last_line(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && s[end - 1] == '\n') --end;
  const size_t nl = s.rfind('\n', end == 0 ? 0 : end - 1);
  return nl == std::string_view::npos || end == 0 ? s : s.substr(nl + 1);
}

class Finder {
 public:
  Finder(const std::string& whole, const std::function<std::string(size_t, bool)>& render,
         std::span<const std::string> stops)
      : whole_(whole), render_(render), stops_(stops) {}

  // The turn of assistant message i (whose text is `content`), at or after `cursor`.
  std::optional<TextSpan> find(size_t i, const std::string& content, size_t cursor) {
    const std::optional<std::string> prompt = try_render(i, true);
    if (prompt && (!prompt->empty() || i > 0) && whole_.starts_with(*prompt) && prompt->size() >= cursor)
      return through_end_of_turn(i, prompt->size());
    if (auto begin = begin_after_partial_prompt(i, prompt, cursor)) return through_end_of_turn(i, *begin);
    if (auto span = found_elsewhere(i, prompt.value_or(""), cursor)) return span;
    return at_the_answer(content, cursor);
  }

 private:
  const std::string& whole_;
  const std::function<std::string(size_t, bool)>& render_;
  std::span<const std::string> stops_;

  // Many templates refuse an empty conversation: no prompt before a first assistant message then.
  std::optional<std::string> try_render(size_t n, bool prompt) {
    try {
      return render_(n, prompt);
    } catch (const Error&) {
      if (n != 0) throw;
      return std::nullopt;
    }
  }

  TextSpan through_end_of_turn(size_t i, size_t begin) {
    size_t end = end_of_first_stop(whole_, begin, stops_);
    if (end == std::string::npos) {
      const std::string through = render_(i + 1, false);
      end = whole_.starts_with(through) && through.size() > begin ? through.size() : whole_.size();
    }
    return {begin, end};
  }

  // The messages before the turn render as in the whole, but the generation prompt only partly does
  // (Qwen3 with enable_thinking=false puts an empty think block in it, which an answer that thinks does not
  // have): the turn starts after the last whole line of the prompt that the rendering has.
  std::optional<size_t> begin_after_partial_prompt(size_t i, const std::optional<std::string>& prompt, size_t cursor) {
    if (!prompt) return std::nullopt;
    const std::optional<std::string> before = try_render(i, false);
    if (!before || !whole_.starts_with(*before) || !prompt->starts_with(*before) || before->size() < cursor)
      return std::nullopt;
    const std::string_view header = std::string_view(*prompt).substr(before->size());
    const size_t matched = common_prefix(header, std::string_view(whole_).substr(before->size()));
    if (matched == header.size()) return before->size() + matched;
    const size_t nl = matched >= 2 ? header.substr(0, matched - 1).rfind('\n') : std::string_view::npos;
    if (nl == std::string_view::npos) return std::nullopt;  // not even the prompt's first line
    return before->size() + nl + 1;
  }

  // The earlier messages render differently once later ones exist (Mistral v0.3 puts the system message in
  // the last user turn): the turn is read from the rendering through it, after the prompt's last line (the
  // latest place where what follows ends a turn), and found in the whole rendering.
  std::optional<TextSpan> found_elsewhere(size_t i, const std::string& prompt, size_t cursor) {
    const std::string through = render_(i + 1, false);
    const std::string_view anchor = last_line(prompt);
    if (anchor.empty()) return std::nullopt;
    for (size_t at = through.rfind(anchor); at != std::string::npos;
         at = at ? through.rfind(anchor, at - 1) : std::string::npos) {
      std::string turn = through.substr(at + anchor.size());
      const size_t cut = end_of_first_stop(turn, 0, stops_);
      if (cut == std::string::npos && !stops_.empty()) continue;
      if (cut != std::string::npos) turn.resize(cut);
      const size_t found = turn.empty() ? std::string::npos : whole_.find(turn, cursor);
      if (found != std::string::npos) return TextSpan{found, found + turn.size()};
    }
    return std::nullopt;
  }

  // Last resort (an assistant message first, before which the template renders nothing usable): the turn
  // starts where the answer's text is, and runs through its end-of-turn text.
  std::optional<TextSpan> at_the_answer(const std::string& content, size_t cursor) {
    const size_t think = content.rfind("</think>");
    const std::string answer = py_strip(std::string_view(content).substr(think == std::string::npos ? 0 : think + 8));
    const size_t at = answer.empty() ? std::string::npos : whole_.find(answer, cursor);
    if (at == std::string::npos) return std::nullopt;
    const size_t end = end_of_first_stop(whole_, at + answer.size(), stops_);
    return TextSpan{at, end == std::string::npos ? at + answer.size() : end};
  }
};

}  // namespace

std::vector<TextSpan> assistant_spans(const std::string& whole, std::span<const AssistantMessage> assistant_messages,
                                      const std::function<std::string(size_t, bool)>& render,
                                      std::span<const std::string> end_of_turn) {
  Finder finder(whole, render, end_of_turn);
  std::vector<TextSpan> spans;
  size_t cursor = 0;
  for (const auto& [i, content] : assistant_messages) {
    const auto span = finder.find(i, content, cursor);
    if (!span)
      throw Error("message " + std::to_string(i) +
                  " (assistant): the chat template renders this turn differently in the whole conversation than "
                  "after the messages before it, so the text to train on cannot be found");
    if (span->end > span->begin) spans.push_back(*span);
    cursor = std::max(cursor, span->end);
  }
  return spans;
}

}  // namespace ls::tok
