#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "error.h"

namespace ls::tok {
namespace {

// True when every character of `s` is below U+0300: such text is already in NFC (the first
// characters that NFC changes or that combine with others start at U+0300).
bool below_combining_marks(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0xCC) return false;  // lead bytes of U+0300 and up
  }
  return true;
}

bool ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::string unicode_normalize(std::string_view s, int options) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()),
                                    &out, utf8proc_option_t(options));
  if (n < 0) throw Error(std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string r(reinterpret_cast<char*>(out), size_t(n));
  std::free(out);
  return r;
}

}  // namespace

Normalizer Normalizer::from_json(const Json& j, const Where& w) {
  Normalizer n;
  if (!j.is_null()) n.add(j, w);
  return n;
}

void Normalizer::add(const Json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "Sequence") {
    const Json& list = member(j, "normalizers", w);
    if (!list.is_array()) w.at("normalizers").fail("expected an array");
    for (size_t i = 0; i < list.size(); ++i) add(list[i], w.at("normalizers").at(i));
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    bool compose = type == "NFC" || type == "NFKC";
    bool compat = type == "NFKC" || type == "NFKD";
    int options = UTF8PROC_STABLE | (compose ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE) | (compat ? UTF8PROC_COMPAT : 0);
    steps_.push_back({.kind = Kind::unicode, .unicode_options = options, .compat = compat, .compose = compose});
  } else if (type == "Prepend") {
    steps_.push_back({.kind = Kind::prepend, .text = string_member(j, "prepend", w)});
  } else if (type == "Replace") {
    steps_.push_back({.kind = Kind::replace,
                      .text = string_member(j, "content", w),
                      .pattern = Pattern::from_json(member(j, "pattern", w), w.at("pattern"))});
  } else {
    w.fail("unsupported normalizer type \"" + type + "\"");
  }
}

std::string Normalizer::apply(std::string_view s) const {
  std::string cur(s);
  std::vector<std::pair<size_t, size_t>> matches;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::unicode: {
        bool unchanged = step.compose && !step.compat ? below_combining_marks(cur) : ascii(cur);
        if (!unchanged) cur = unicode_normalize(cur, step.unicode_options);
        break;
      }
      case Kind::prepend:
        if (!cur.empty()) cur.insert(0, step.text);  // HF prepends only to non-empty text
        break;
      case Kind::replace: {
        step.pattern.find_all(cur, matches);
        if (matches.empty()) break;
        std::string out;
        size_t prev = 0;
        for (auto [b, e] : matches) {
          out.append(cur, prev, b - prev);
          out += step.text;
          prev = e;
        }
        out.append(cur, prev, std::string::npos);
        cur = std::move(out);
        break;
      }
    }
  }
  return cur;
}

}  // namespace ls::tok
