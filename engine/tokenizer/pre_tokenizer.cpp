#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

// GPT-2's word regex, which ByteLevel uses when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

bool single_code_point(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  next_code_point(s, i);
  return i == s.size();
}

std::string to_byte_level(std::string_view s) {
  const auto& alphabet = byte_level_alphabet();
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) out += alphabet.byte_to_utf8[static_cast<unsigned char>(c)];
  return out;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const Json& j, const Where& w) {
  PreTokenizer p;
  if (!j.is_null()) p.add(j, w);
  return p;
}

void PreTokenizer::add(const Json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "Sequence") {
    const Json& list = member(j, "pretokenizers", w);
    if (!list.is_array()) w.at("pretokenizers").fail("expected an array");
    for (size_t i = 0; i < list.size(); ++i) add(list[i], w.at("pretokenizers").at(i));
  } else if (type == "Split") {
    Step s{.kind = Kind::split, .pattern = Pattern::from_json(member(j, "pattern", w), w.at("pattern"))};
    std::string behavior = string_member(j, "behavior", w);
    if (behavior == "Removed") s.behavior = Behavior::removed;
    else if (behavior == "Isolated") s.behavior = Behavior::isolated;
    else if (behavior == "MergedWithPrevious") s.behavior = Behavior::merged_with_previous;
    else if (behavior == "MergedWithNext") s.behavior = Behavior::merged_with_next;
    else if (behavior == "Contiguous") s.behavior = Behavior::contiguous;
    else w.at("behavior").fail("unsupported split behavior \"" + behavior + "\"");
    s.invert = bool_member(j, "invert", w, false);
    steps_.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    Step s{.kind = Kind::byte_level};
    s.use_pattern = bool_member(j, "use_regex", w, true);
    if (s.use_pattern) s.pattern = Pattern::from_json(Json{{"Regex", kGpt2Pattern}}, w);
    s.add_prefix_space = bool_member(j, "add_prefix_space", w, true);
    steps_.push_back(std::move(s));
  } else if (type == "Metaspace") {
    Step s{.kind = Kind::metaspace, .behavior = Behavior::merged_with_next};
    s.replacement = string_member(j, "replacement", w);
    if (!single_code_point(s.replacement)) w.at("replacement").fail("expected one character");
    s.pattern = Pattern::literal(s.replacement);
    if (const Json* scheme = optional_member(j, "prepend_scheme", w)) {
      std::string v = scheme->is_string() ? scheme->get<std::string>() : "";
      if (v == "always") s.prepend = Prepend::always;
      else if (v == "first") s.prepend = Prepend::first;
      else if (v == "never") s.prepend = Prepend::never;
      else w.at("prepend_scheme").fail("expected \"always\", \"first\" or \"never\"");
    } else {  // files from before prepend_scheme
      s.prepend = bool_member(j, "add_prefix_space", w, true) ? Prepend::always : Prepend::never;
    }
    s.use_pattern = bool_member(j, "split", w, true);
    steps_.push_back(std::move(s));
  } else {
    w.fail("unsupported pre_tokenizer type \"" + type + "\"");
  }
}

// NormalizedString::split of HF `tokenizers`: matches and the text between them, grouped by behavior.
void PreTokenizer::split(const Step& step, const Piece& piece, std::vector<Piece>& out) const {
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  struct Part {
    size_t begin, end;
    bool match;
  };
  thread_local std::vector<Part> parts;
  thread_local std::vector<Part> grouped;
  const std::string& s = piece.text;
  step.pattern.find_all(s, matches);
  parts.clear();
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) parts.push_back({prev, b, step.invert});
    parts.push_back({b, e, !step.invert});
    prev = e;
  }
  if (prev != s.size()) parts.push_back({prev, s.size(), step.invert});

  grouped.clear();
  bool previous_match = false;
  switch (step.behavior) {
    case Behavior::isolated:
      grouped = parts;
      break;
    case Behavior::removed:
      for (const Part& p : parts) {
        if (!p.match) grouped.push_back(p);
      }
      break;
    case Behavior::contiguous:
      for (const Part& p : parts) {
        if (p.match == previous_match && !grouped.empty()) grouped.back().end = p.end;
        else grouped.push_back(p);
        previous_match = p.match;
      }
      break;
    case Behavior::merged_with_previous:
      for (const Part& p : parts) {
        if (p.match && !previous_match && !grouped.empty()) grouped.back().end = p.end;
        else grouped.push_back(p);
        previous_match = p.match;
      }
      break;
    case Behavior::merged_with_next:
      for (size_t i = parts.size(); i-- > 0;) {
        const Part& p = parts[i];
        if (p.match && !previous_match && !grouped.empty()) grouped.back().begin = p.begin;
        else grouped.push_back(p);
        previous_match = p.match;
      }
      std::reverse(grouped.begin(), grouped.end());
      break;
  }
  for (const Part& p : grouped) {
    if (p.end == p.begin) continue;
    out.push_back({s.substr(p.begin, p.end - p.begin), piece.at_input_start && p.begin == 0});
  }
}

void PreTokenizer::apply(std::vector<Piece>& pieces) const {
  std::vector<Piece> next;
  for (const Step& step : steps_) {
    next.clear();
    for (Piece& piece : pieces) {
      switch (step.kind) {
        case Kind::split:
          split(step, piece, next);
          break;
        case Kind::byte_level: {
          if (step.add_prefix_space && !piece.text.starts_with(' ')) piece.text.insert(0, " ");
          size_t first = next.size();
          if (step.use_pattern) split(step, piece, next);
          else if (!piece.text.empty()) next.push_back(std::move(piece));
          for (size_t i = first; i < next.size(); ++i) next[i].text = to_byte_level(next[i].text);
          break;
        }
        case Kind::metaspace: {
          std::string replaced;
          for (char c : piece.text) {
            if (c == ' ') replaced += step.replacement;
            else replaced += c;
          }
          bool prepend = step.prepend == Prepend::always ||
                         (step.prepend == Prepend::first && piece.at_input_start);
          if (prepend && !replaced.starts_with(step.replacement)) replaced.insert(0, step.replacement);
          Piece p{std::move(replaced), piece.at_input_start};
          if (step.use_pattern) split(step, p, next);
          else if (!p.text.empty()) next.push_back(std::move(p));
          break;
        }
      }
    }
    pieces.swap(next);
  }
}

}  // namespace ls::tok
