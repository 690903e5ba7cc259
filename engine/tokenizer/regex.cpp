#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

#include "error.h"
#include "tokenizer/utf8.h"

namespace ls::tok {
namespace {

pcre2_code* code_of(void* p) { return static_cast<pcre2_code*>(p); }

std::string pcre2_message(int rc) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(rc, buf, sizeof(buf));
  return n < 0 ? "PCRE2 error " + std::to_string(rc) : std::string(reinterpret_cast<char*>(buf), size_t(n));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* m) const { pcre2_match_context_free(m); }
};
struct JitStackDeleter {
  void operator()(pcre2_jit_stack* s) const { pcre2_jit_stack_free(s); }
};

// One ovector pair is all find_all reads; a match with more groups still reports its bounds.
pcre2_match_data* thread_match_data() {
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(pcre2_match_data_create(1, nullptr));
  return md.get();
}

}  // namespace

std::string onig_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      bool in_class = class_depth > 0;
      if (e == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (e == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else if (e == 'h') {
        out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]";
      } else if (e == 'H' && !in_class) {
        out += "[^0-9a-fA-F]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[') {
      if (class_depth > 0 && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:] inside a class
        size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out.append(p.substr(i, close + 2 - i));
          i = close + 1;
          continue;
        }
      }
      ++class_depth;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') { out += '^'; ++i; }
      if (i + 1 < p.size() && p[i + 1] == ']') { out += ']'; ++i; }
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out += c;
  }
  return out;
}

Regex::Regex(std::string_view pattern, const std::string& where) : pattern_(pattern) {
  std::string translated = onig_to_pcre2(pattern);
  int rc = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                    PCRE2_UTF | PCRE2_UCP, &rc, &offset, nullptr);
  if (!code) {
    throw Error(where + ": cannot compile regex /" + pattern_ + "/: " + pcre2_message(rc) + " at offset " +
                std::to_string(offset));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // on failure pcre2_match interprets
  code_ = code;
}

Regex::~Regex() {
  if (code_) pcre2_code_free(code_of(code_));
}

Regex::Regex(Regex&& other) noexcept : pattern_(std::move(other.pattern_)), code_(other.code_) {
  other.code_ = nullptr;
}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (code_) pcre2_code_free(code_of(code_));
    pattern_ = std::move(other.pattern_);
    code_ = other.code_;
    other.code_ = nullptr;
  }
  return *this;
}

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  pcre2_match_data* md = thread_match_data();
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> big_ctx;  // only after a JIT stack overflow
  std::unique_ptr<pcre2_jit_stack, JitStackDeleter> big_stack;
  auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t from = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (from <= s.size()) {
    int rc = pcre2_match(code_of(code_), subject, s.size(), from, PCRE2_NO_UTF_CHECK, md, big_ctx.get());
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !big_ctx) {
      big_ctx.reset(pcre2_match_context_create(nullptr));
      big_stack.reset(pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr));
      if (!big_ctx || !big_stack) throw Error("regex /" + pattern_ + "/: out of memory");
      pcre2_jit_stack_assign(big_ctx.get(), nullptr, big_stack.get());
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw Error("regex /" + pattern_ + "/: matching " + std::to_string(s.size()) + " bytes failed: " +
                  pcre2_message(rc));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (b == e && have_last && last_end == e) {  // no empty match right after the previous one
      from += from < s.size() ? utf8_length(static_cast<unsigned char>(s[from])) : 1;
      continue;
    }
    out.emplace_back(b, e);
    from = e;
    have_last = true;
    last_end = e;
  }
}

}  // namespace ls::tok
