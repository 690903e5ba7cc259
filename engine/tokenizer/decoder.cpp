#include "tokenizer/decoder.h"

#include <cstdint>
#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

// The byte of a "<0xNN>" token, or -1. Mirrors u8::from_str_radix on the two characters after "<0x",
// which also takes "+N".
int fallback_byte(const std::string& t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
  int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  if (t[3] == '+' && lo >= 0) return lo;
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> cps;
  for (size_t i = 0; i < s.size();) cps.push_back(next_code_point(s, i));
  return cps;
}

}  // namespace

Decoder Decoder::from_json(const Json& j, const Where& w) {
  Decoder d;
  if (!j.is_null()) {
    d.present_ = true;
    d.add(j, w);
  }
  return d;
}

void Decoder::add(const Json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "Sequence") {
    const Json& list = member(j, "decoders", w);
    if (!list.is_array()) w.at("decoders").fail("expected an array");
    for (size_t i = 0; i < list.size(); ++i) add(list[i], w.at("decoders").at(i));
  } else if (type == "ByteLevel") {
    steps_.push_back({.kind = Kind::byte_level});
  } else if (type == "Replace") {
    steps_.push_back({.kind = Kind::replace,
                      .pattern = Pattern::from_json(member(j, "pattern", w), w.at("pattern")),
                      .content = string_member(j, "content", w)});
  } else if (type == "ByteFallback") {
    steps_.push_back({.kind = Kind::byte_fallback});
  } else if (type == "Fuse") {
    steps_.push_back({.kind = Kind::fuse});
  } else if (type == "Strip") {
    Step s{.kind = Kind::strip, .content = string_member(j, "content", w)};
    if (code_points(s.content).size() != 1) w.at("content").fail("expected one character");
    int64_t start = int_member(j, "start", w, 0), stop = int_member(j, "stop", w, 0);
    if (start < 0 || stop < 0) w.fail("start and stop must not be negative");
    s.start = size_t(start);
    s.stop = size_t(stop);
    steps_.push_back(std::move(s));
  } else if (type == "Metaspace") {
    Step s{.kind = Kind::metaspace, .content = string_member(j, "replacement", w)};
    if (code_points(s.content).size() != 1) w.at("replacement").fail("expected one character");
    if (const Json* scheme = optional_member(j, "prepend_scheme", w)) {
      s.prepend = !(scheme->is_string() && scheme->get<std::string>() == "never");
    } else {
      s.prepend = bool_member(j, "add_prefix_space", w, true);
    }
    steps_.push_back(std::move(s));
  } else {
    w.fail("unsupported decoder type \"" + type + "\"");
  }
}

bool Decoder::has_byte_fallback() const {
  for (const Step& s : steps_) {
    if (s.kind == Kind::byte_fallback) return true;
  }
  return false;
}

void Decoder::apply(const Step& step, std::vector<std::string>& tokens) const {
  switch (step.kind) {
    case Kind::byte_level: {
      // Each token's characters back to bytes; a token with a character outside the alphabet
      // (an added token, say) keeps its own UTF-8 bytes. Then from_utf8_lossy over the whole.
      const auto& alphabet = byte_level_alphabet();
      std::string bytes;
      for (const std::string& t : tokens) {
        size_t mark = bytes.size();
        bool ok = true;
        for (size_t i = 0; i < t.size();) {
          char32_t c = next_code_point(t, i);
          int b = c < alphabet.char_to_byte.size() ? alphabet.char_to_byte[c] : -1;
          if (b < 0) { ok = false; break; }
          bytes += char(b);
        }
        if (!ok) {
          bytes.resize(mark);
          bytes += t;
        }
      }
      tokens.assign(1, utf8_lossy(bytes));
      break;
    }
    case Kind::replace: {
      std::vector<std::pair<size_t, size_t>> matches;
      for (std::string& t : tokens) {
        step.pattern.find_all(t, matches);
        if (matches.empty()) continue;
        std::string out;
        size_t prev = 0;
        for (auto [b, e] : matches) {
          out.append(t, prev, b - prev);
          out += step.content;
          prev = e;
        }
        out.append(t, prev, std::string::npos);
        t = std::move(out);
      }
      break;
    }
    case Kind::byte_fallback: {
      // Runs of <0xNN> tokens become their text when it is valid UTF-8, else one U+FFFD per byte.
      std::vector<std::string> out;
      std::string run;
      size_t run_tokens = 0;
      auto flush = [&] {
        if (run_tokens == 0) return;
        if (find_invalid_utf8(run) == std::string::npos) {
          out.push_back(run);
        } else {
          for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(kReplacementChar);
        }
        run.clear();
        run_tokens = 0;
      };
      for (std::string& t : tokens) {
        int b = fallback_byte(t);
        if (b >= 0) {
          run += char(b);
          ++run_tokens;
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      tokens = std::move(out);
      break;
    }
    case Kind::fuse: {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      break;
    }
    case Kind::strip: {
      char32_t c = code_points(step.content)[0];
      for (std::string& t : tokens) {
        std::vector<char32_t> cps = code_points(t);
        size_t start_cut = 0;
        for (size_t i = 0; i < step.start && i < cps.size() && cps[i] == c; ++i) start_cut = i + 1;
        size_t stop_cut = cps.size();
        for (size_t i = 0; i < step.stop && i < cps.size(); ++i) {
          size_t index = cps.size() - i - 1;
          if (cps[index] != c) break;
          stop_cut = index;
        }
        std::string out;
        for (size_t i = start_cut; i < stop_cut; ++i) append_utf8(out, cps[i]);
        t = std::move(out);
      }
      break;
    }
    case Kind::metaspace: {
      // The replacement becomes a space, except in the first token, where it goes (prepend schemes).
      for (size_t k = 0; k < tokens.size(); ++k) {
        std::string out;
        const std::string& t = tokens[k];
        for (size_t pos = 0; pos < t.size();) {
          if (t.compare(pos, step.content.size(), step.content) == 0) {
            if (!(k == 0 && step.prepend)) out += ' ';
            pos += step.content.size();
          } else {
            out += t[pos++];
          }
        }
        tokens[k] = std::move(out);
      }
      break;
    }
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  if (!present_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const Step& step : steps_) apply(step, tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace ls::tok
