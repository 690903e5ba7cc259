#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pipeline.h"

#include <pcre2.h>

#include <utf8proc.h>

#include <array>
#include <cctype>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "error.h"

namespace ls::tok {

namespace {

using nlohmann::json;

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for code points 256+.
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::unordered_map<char32_t, uint8_t> to_byte;
  ByteMap() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? char32_t(b) : next++;
      append_utf8(to_char[size_t(b)], cp);
      to_byte[cp] = uint8_t(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string pattern_of(const json& j, const std::string& where, const std::string& source, bool* is_regex) {
  const auto p = j.find("pattern");
  if (p == j.end() || !p->is_object()) throw Error(source + ": " + where + ": missing \"pattern\"");
  if (p->contains("Regex")) {
    *is_regex = true;
    return (*p)["Regex"].get<std::string>();
  }
  if (p->contains("String")) {
    *is_regex = false;
    return (*p)["String"].get<std::string>();
  }
  throw Error(source + ": " + where + ": \"pattern\" is neither {\"Regex\": ...} nor {\"String\": ...}");
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  size_t i = 0;
  for (size_t k; (k = s.find(from, i)) != std::string::npos; i = k + from.size()) out.append(s, i, k - i).append(to);
  return out.append(s, i);
}

// One code point of valid UTF-8 at s[i] (length in *n).
char32_t code_point(std::string_view s, size_t i, size_t* n) {
  const auto b = static_cast<unsigned char>(s[i]);
  *n = std::min(utf8_length(b), s.size() - i);
  if (*n == 1) return b;
  char32_t cp = b & (0xFF >> (*n + 1));
  for (size_t k = 1; k < *n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

std::string lowercase(std::string_view s) {
  std::string out;
  for (size_t i = 0, n; i < s.size(); i += n) {
    char32_t cp = code_point(s, i, &n);
    append_utf8(out, char32_t(utf8proc_tolower(utf8proc_int32_t(cp))));
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& source) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                        &offset, nullptr);
  if (!code_) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(source + ": regex /" + pattern + "/ does not compile at offset " + std::to_string(offset) + ": " +
                reinterpret_cast<const char*>(msg));
  }
  jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(code_); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = jit_ ? pcre2_jit_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr)
                  : pcre2_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: skip one character
      if (b >= text.size()) break;
      start = b + utf8_length(static_cast<unsigned char>(text[b]));
      continue;
    }
    out.emplace_back(b, e);
    start = e;
  }
  pcre2_match_data_free(md);
  return out;
}

// ---- normalizers

Normalizer parse_normalizer(const json& j, const std::string& source) {
  Normalizer n;
  if (j.is_null()) return n;
  const auto type = j.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& s : j.at("normalizers")) {
      auto sub = parse_normalizer(s, source);
      n.insert(n.end(), sub.begin(), sub.end());
    }
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    n.push_back({.kind = NormalizerStep::Kind::Unicode,
                 .form = type == "NFC" ? NormalForm::NFC : type == "NFD" ? NormalForm::NFD
                         : type == "NFKC" ? NormalForm::NFKC : NormalForm::NFKD});
  } else if (type == "Prepend") {
    n.push_back({.kind = NormalizerStep::Kind::Prepend, .a = j.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    bool is_regex = false;
    auto pattern = pattern_of(j, "normalizer Replace", source, &is_regex);
    NormalizerStep s{.kind = NormalizerStep::Kind::Replace, .a = pattern, .b = j.at("content").get<std::string>()};
    if (is_regex) s.regex = std::make_shared<Regex>(pattern, source);
    n.push_back(std::move(s));
  } else if (type == "Lowercase") {
    n.push_back({.kind = NormalizerStep::Kind::Lowercase});
  } else {
    throw Error(source + ": normalizer \"" + type + "\" is not supported");
  }
  return n;
}

std::string apply(const Normalizer& n, std::string_view text) {
  std::string s(text);
  for (const auto& step : n) {
    switch (step.kind) {
      case NormalizerStep::Kind::Unicode: s = normalize(s, step.form); break;
      case NormalizerStep::Kind::Prepend:
        if (!s.empty()) s = step.a + s;  // HF prepends only to non-empty text
        break;
      case NormalizerStep::Kind::Replace:
        if (step.regex) {
          std::string out;
          size_t last = 0;
          for (auto [b, e] : step.regex->find_all(s)) out.append(s, last, b - last).append(step.b), last = e;
          s = out.append(s, last);
        } else {
          s = replace_all(std::move(s), step.a, step.b);
        }
        break;
      case NormalizerStep::Kind::Lowercase: s = lowercase(s); break;
    }
  }
  return s;
}

// ---- pre-tokenizers

PreTokenizer parse_pre_tokenizer(const json& j, const std::string& source) {
  PreTokenizer p;
  if (j.is_null()) return p;
  const auto type = j.value("type", std::string());
  using K = PreTokenizerStep::Kind;
  if (type == "Sequence") {
    for (const auto& s : j.at("pretokenizers")) {
      auto sub = parse_pre_tokenizer(s, source);
      p.insert(p.end(), sub.begin(), sub.end());
    }
  } else if (type == "Split") {
    bool is_regex = false;
    auto pattern = pattern_of(j, "pre_tokenizer Split", source, &is_regex);
    if (!is_regex) {  // a literal: escape it for PCRE2
      std::string escaped = "\\Q" + replace_all(pattern, "\\E", "\\E\\\\E\\Q") + "\\E";
      pattern = escaped;
    }
    PreTokenizerStep s{.kind = K::Split, .regex = std::make_shared<Regex>(pattern, source)};
    const auto behavior = j.value("behavior", std::string("Isolated"));
    using B = PreTokenizerStep::Behavior;
    if (behavior == "Isolated") s.behavior = B::Isolated;
    else if (behavior == "Removed") s.behavior = B::Removed;
    else if (behavior == "MergedWithPrevious") s.behavior = B::MergedWithPrevious;
    else if (behavior == "MergedWithNext") s.behavior = B::MergedWithNext;
    else if (behavior == "Contiguous") s.behavior = B::Contiguous;
    else throw Error(source + ": pre_tokenizer Split: behavior \"" + behavior + "\" is not supported");
    s.invert = j.value("invert", false);
    p.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    PreTokenizerStep s{.kind = K::ByteLevel};
    s.add_prefix_space = j.value("add_prefix_space", true);
    if (j.value("use_regex", true)) s.regex = std::make_shared<Regex>(kGpt2Pattern, source);
    p.push_back(std::move(s));
  } else if (type == "Metaspace") {
    PreTokenizerStep s{.kind = K::Metaspace};
    s.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    const auto scheme = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
    s.prepend = scheme == "first" ? PreTokenizerStep::Prepend::First
                : scheme == "never" ? PreTokenizerStep::Prepend::Never
                                    : PreTokenizerStep::Prepend::Always;
    s.split = j.value("split", true);
    p.push_back(std::move(s));
  } else {
    throw Error(source + ": pre_tokenizer \"" + type + "\" is not supported");
  }
  return p;
}

namespace {
using Behavior = PreTokenizerStep::Behavior;

void split_piece(const PreTokenizerStep& s, std::string_view text, std::vector<std::string>& out) {
  // (range, is_match) covering the text.
  std::vector<std::pair<std::string_view, bool>> parts;
  size_t last = 0;
  for (auto [b, e] : s.regex->find_all(text)) {
    if (b > last) parts.emplace_back(text.substr(last, b - last), s.invert);
    parts.emplace_back(text.substr(b, e - b), !s.invert);
    last = e;
  }
  if (last < text.size()) parts.emplace_back(text.substr(last), s.invert);
  std::vector<std::string> pieces;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto [part, match] = parts[i];
    switch (s.behavior) {
      case Behavior::Isolated: pieces.emplace_back(part); break;
      case Behavior::Removed:
        if (!match) pieces.emplace_back(part);
        break;
      case Behavior::MergedWithPrevious:
        if (match && !pieces.empty() && i > 0 && !parts[i - 1].second) pieces.back() += part;
        else pieces.emplace_back(part);
        break;
      case Behavior::MergedWithNext:
        if (match && i + 1 < parts.size() && !parts[i + 1].second) {
          pieces.emplace_back(std::string(part) + std::string(parts[i + 1].first));
          ++i;
        } else {
          pieces.emplace_back(part);
        }
        break;
      case Behavior::Contiguous:
        if (match && i > 0 && parts[i - 1].second) pieces.back() += part;
        else pieces.emplace_back(part);
        break;
    }
  }
  for (auto& p : pieces)
    if (!p.empty()) out.push_back(std::move(p));
}

std::string byte_level_map(std::string_view piece) {
  const auto& m = byte_map();
  std::string out;
  out.reserve(piece.size() * 2);
  for (unsigned char b : piece) out += m.to_char[b];
  return out;
}
}  // namespace

std::vector<std::string> pre_tokenize(const PreTokenizer& p, std::string_view text, bool first) {
  std::vector<std::string> pieces{std::string(text)};
  if (text.empty()) return {};
  for (const auto& s : p) {
    std::vector<std::string> next;
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string_view piece = pieces[k];
      switch (s.kind) {
        case PreTokenizerStep::Kind::Split: split_piece(s, piece, next); break;
        case PreTokenizerStep::Kind::ByteLevel: {
          std::string t(piece);
          if (s.add_prefix_space && !t.empty() && t[0] != ' ' && k == 0 && first) t = " " + t;
          if (s.regex) {
            std::vector<std::string> sub;
            PreTokenizerStep iso{.kind = PreTokenizerStep::Kind::Split, .regex = s.regex};
            split_piece(iso, t, sub);
            for (auto& w : sub) next.push_back(byte_level_map(w));
          } else {
            next.push_back(byte_level_map(t));
          }
          break;
        }
        case PreTokenizerStep::Kind::Metaspace: {
          std::string t = replace_all(std::string(piece), " ", s.replacement);
          bool prepend = s.prepend == PreTokenizerStep::Prepend::Always ||
                         (s.prepend == PreTokenizerStep::Prepend::First && first && k == 0);
          if (prepend && t.rfind(s.replacement, 0) != 0) t = s.replacement + t;
          if (!s.split) {
            next.push_back(std::move(t));
            break;
          }
          // Split before every replacement character (MergedWithNext).
          size_t start = 0;
          for (size_t i = s.replacement.size(); (i = t.find(s.replacement, i)) != std::string::npos; i += s.replacement.size()) {
            if (i > start) next.push_back(t.substr(start, i - start));
            start = i;
          }
          if (start < t.size()) next.push_back(t.substr(start));
          break;
        }
      }
    }
    pieces = std::move(next);
  }
  return pieces;
}

// ---- decoders

Decoder parse_decoder(const json& j, const std::string& source) {
  Decoder d;
  if (j.is_null()) return d;
  const auto type = j.value("type", std::string());
  using K = DecoderStep::Kind;
  if (type == "Sequence") {
    for (const auto& s : j.at("decoders")) {
      auto sub = parse_decoder(s, source);
      d.insert(d.end(), sub.begin(), sub.end());
    }
  } else if (type == "ByteLevel") {
    d.push_back({.kind = K::ByteLevel});
  } else if (type == "Replace") {
    bool is_regex = false;
    auto pattern = pattern_of(j, "decoder Replace", source, &is_regex);
    if (is_regex) throw Error(source + ": decoder Replace with a regex pattern is not supported");
    d.push_back({.kind = K::Replace, .a = pattern, .b = j.at("content").get<std::string>()});
  } else if (type == "ByteFallback") {
    d.push_back({.kind = K::ByteFallback});
  } else if (type == "Fuse") {
    d.push_back({.kind = K::Fuse});
  } else if (type == "Strip") {
    d.push_back({.kind = K::Strip, .a = j.value("content", std::string(" ")), .start = j.value("start", size_t(0)),
                 .stop = j.value("stop", size_t(0))});
  } else if (type == "Metaspace") {
    DecoderStep s{.kind = K::Metaspace};
    s.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    s.prepend = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never")) != "never";
    d.push_back(std::move(s));
  } else {
    throw Error(source + ": decoder \"" + type + "\" is not supported");
  }
  return d;
}

std::string decode_tokens(const Decoder& d, std::vector<std::string> tokens) {
  using K = DecoderStep::Kind;
  for (const auto& s : d) {
    switch (s.kind) {
      case K::ByteLevel: {
        const auto& m = byte_map();
        std::string bytes;
        for (const auto& t : tokens) {
          std::string mapped;
          bool all = true;
          for (size_t i = 0, n; i < t.size(); i += n) {
            auto it = m.to_byte.find(code_point(t, i, &n));
            if (it == m.to_byte.end()) {
              all = false;
              break;
            }
            mapped += char(it->second);
          }
          bytes += all ? mapped : t;
        }
        tokens = {utf8_lossy(bytes)};
        break;
      }
      case K::Replace:
        for (auto& t : tokens) t = replace_all(std::move(t), s.a, s.b);
        break;
      case K::ByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        size_t count = 0;
        auto flush = [&] {
          if (!count) return;
          if (utf8_valid(pending)) out.push_back(pending);
          else
            for (size_t i = 0; i < count; ++i) out.push_back("\xEF\xBF\xBD");
          pending.clear();
          count = 0;
        };
        for (auto& t : tokens) {
          if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
              std::isxdigit(static_cast<unsigned char>(t[4]))) {
            pending += char(std::stoi(t.substr(3, 2), nullptr, 16));
            ++count;
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case K::Fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens = {all};
        break;
      }
      case K::Strip:
        for (auto& t : tokens) {
          size_t b = 0, e = t.size();
          for (size_t k = 0; k < s.start && t.compare(b, s.a.size(), s.a) == 0 && b < e; ++k) b += s.a.size();
          for (size_t k = 0; k < s.stop && e >= b + s.a.size() && t.compare(e - s.a.size(), s.a.size(), s.a) == 0; ++k)
            e -= s.a.size();
          t = t.substr(b, e - b);
        }
        break;
      case K::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          tokens[i] = replace_all(std::move(tokens[i]), s.replacement, " ");
          if (i == 0 && s.prepend && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
        }
        break;
    }
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

}  // namespace ls::tok
