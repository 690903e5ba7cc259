#include "tokenizer/jinja/lexer.h"

#include <algorithm>

#include "tokenizer/jinja/python_ops.h"
#include "tokenizer/jinja/python_text.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/py_str.h"
#include "tokenizer/utf8.h"

namespace ls::tok::jinja {

namespace {

// Python's encode('ascii', 'backslashreplace') of one character, without its backslash.
std::string backslash_replaced(char32_t c) {
  static constexpr char kHex[] = "0123456789abcdef";
  const int digits = c <= 0xFF ? 2 : c <= 0xFFFF ? 4 : 8;
  std::string out(1, c <= 0xFF ? 'x' : c <= 0xFFFF ? 'u' : 'U');
  for (int k = digits - 1; k >= 0; --k) out += kHex[(c >> (4 * k)) & 0xF];
  return out;
}

}  // namespace

bool unescape_string_literal(std::string_view s, std::string& value, std::string& error) {
  value.clear();
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '\\') {
      value += s[i++];
      continue;
    }
    if (i + 1 >= s.size()) {
      error = "\\ at end of string";
      return false;
    }
    const char e = s[i + 1];
    i += 2;
    constexpr std::string_view kEscapes = "ntrabfv\\'\"", kValues = "\n\t\r\a\b\f\v\\'\"";
    if (const size_t at = kEscapes.find(e); at != std::string_view::npos) {
      value += kValues[at];
    } else if (e == '\n') {  // a line continuation
    } else if (e >= '0' && e <= '7') {
      uint32_t cp = uint32_t(e - '0');
      for (int k = 0; k < 2 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k) cp = cp * 8 + uint32_t(s[i++] - '0');
      append_utf8(value, cp);
    } else if (e == 'x' || e == 'u' || e == 'U') {
      const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      size_t k = 0;
      for (; k < digits && i + k < s.size() && hex_digit(s[i + k]) >= 0; ++k)
        cp = cp * 16 + uint32_t(hex_digit(s[i + k]));
      if (k < digits) {
        error = e == 'x'   ? "truncated \\xXX escape"
                : e == 'u' ? "truncated \\uXXXX escape"
                           : "truncated \\UXXXXXXXX escape";
        return false;
      }
      if (cp > 0x10FFFF) {
        error = "illegal Unicode character";
        return false;
      }
      append_utf8(value, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);  // lone surrogates cannot be UTF-8
      i += k;
    } else if (e == 'N') {
      error = "\\N{...} escapes are not supported";
      return false;
    } else if (static_cast<unsigned char>(e) >= 0x80) {  // the backslash escapes the first byte of \xhh
      size_t j = i - 1;
      const char32_t c = next_code_point(s, j);
      value += '\\';
      value += backslash_replaced(c);
      i = j;
    } else {  // unknown escapes stay as written, as in Python
      value += '\\';
      value += e;
    }
  }
  return true;
}

namespace {

bool is_space_at(std::string_view s, size_t i, size_t& length) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    length = 1;
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F);
  }
  size_t j = i;
  const char32_t cp = next_code_point(s, j);
  length = j - i;
  return py_isspace(cp);
}

// Bytes of whitespace (Python's \s) starting at s[i].
size_t space_run(std::string_view s, size_t i) {
  size_t start = i, n = 0;
  while (i < s.size() && is_space_at(s, i, n)) i += n;
  return i - start;
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string source, const std::string& name) : src_(std::move(source)), name_(name) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    push(TokenType::eof, src_.size());
    return std::move(tokens_);
  }

 private:
  std::string src_;
  const std::string& name_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;

  // The line and column (1-based, in code points) of a byte offset. Tokens come in order, so the column counts on
  // from the previous token's where both are on one line: counting from the line's start each time made a long
  // line's lexing quadratic (a 280 KB one-line template took 6.4 s; chat_template_fuzz's timeout, session 31).
  mutable size_t last_offset_ = 0, last_line_ = 0, last_column_ = 0;  // last_column_: code points before last_offset_
  std::pair<int, int> where(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    const size_t line = size_t(it - line_starts_.begin()), start = *it;
    const bool on_from_last = line == last_line_ && offset >= last_offset_ && last_offset_ >= start;
    const size_t from = on_from_last ? last_offset_ : start;
    const size_t column = (on_from_last ? last_column_ : 0) +
                          code_point_count(std::string_view(src_).substr(from, offset - from));
    last_offset_ = offset;
    last_line_ = line;
    last_column_ = column;
    return {int(line) + 1, int(column) + 1};
  }

  [[noreturn]] void error_at(size_t offset, const std::string& message) const {
    const auto [line, column] = where(offset);
    throw TemplateError(ErrorKind::syntax, message, name_, line, column);
  }

  Token& push(TokenType type, size_t offset, std::string text = {}) {
    const auto [line, column] = where(offset);
    tokens_.push_back(Token{.type = type, .text = std::move(text), .line = line, .column = column});
    return tokens_.back();
  }

  // jinja2's message, which counts characters from the template's start.
  std::string unexpected_char(size_t offset, const std::string& ch) const {
    return "unexpected char " + string_repr(ch) + " at " +
           std::to_string(code_point_count(std::string_view(src_).substr(0, offset)));
  }

  bool at(size_t i, std::string_view s) const { return std::string_view(src_).substr(i, s.size()) == s; }

  // The data before a tag at `tag` whose sign is `sign` ('-', '+' or 0), with jinja2's stripping.
  std::string data_before(size_t start, size_t tag, char sign, bool lstrip) const {
    std::string text = src_.substr(start, tag - start);
    if (sign == '-') return py_rstrip(text);
    if (sign != '+' && lstrip) {
      const size_t line_pos = text.rfind('\n') + 1;  // npos + 1 == 0
      if ((line_pos > 0 || line_starting_) && line_pos < text.size() &&
          space_run(text, line_pos) == text.size() - line_pos)
        text.resize(line_pos);
    }
    return text;
  }

  void push_data(size_t offset, std::string text) {
    if (!text.empty()) push(TokenType::data, offset, std::move(text));
  }

  // After a block or comment end "%}" or "#}" at `end_at` (its sign before it handled by the caller):
  // the position after it, with -%} eating whitespace and trim_blocks eating one newline.
  size_t after_tag_end(size_t close_at, char sign) const {
    size_t end = close_at + 2;
    if (sign == '-') return end + space_run(src_, end);
    if (sign != '+' && end < src_.size() && src_[end] == '\n') ++end;
    return end;
  }

  void lex_root() {
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        push_data(pos_, src_.substr(pos_));
        pos_ = src_.size();
        return;
      }
      const char k = src_[tag + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++tag;
    }
    const char kind = src_[tag + 1];
    const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
    const size_t inside = tag + 2 + (sign ? 1 : 0);
    push_data(pos_, data_before(pos_, tag, sign, kind != '{'));
    line_starting_ = false;
    if (kind == '#') {
      lex_comment(tag, inside);
    } else if (kind == '%' && lex_raw(inside)) {
    } else {
      push(kind == '{' ? TokenType::variable_begin : TokenType::block_begin, tag);
      pos_ = inside;
      lex_tag(kind == '{');
    }
  }

  void lex_comment(size_t tag, size_t inside) {
    const size_t close = src_.find("#}", inside);
    if (close == std::string::npos) error_at(tag, "Missing end of comment tag");
    const char sign = close > inside && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    pos_ = after_tag_end(close, sign);
    line_starting_ = src_[pos_ - 1] == '\n';
  }

  // {% raw %}...{% endraw %}: the text between is data as written. False when the tag is not raw.
  bool lex_raw(size_t inside) {
    size_t i = inside + space_run(src_, inside);
    if (!at(i, "raw")) return false;
    i += 3;
    i += space_run(src_, i);
    if (at(i, "-%}")) {
      i += 3;
      i += space_run(src_, i);
    } else if (at(i, "%}")) {
      i += 2;
    } else {
      return false;
    }
    const size_t body = i;
    for (size_t t = src_.find("{%", body); t != std::string::npos; t = src_.find("{%", t + 2)) {
      const char sign = t + 2 < src_.size() && (src_[t + 2] == '-' || src_[t + 2] == '+') ? src_[t + 2] : 0;
      size_t j = t + 2 + (sign ? 1 : 0);
      j += space_run(src_, j);
      if (!at(j, "endraw")) continue;
      j += 6;
      j += space_run(src_, j);
      char close_sign = 0;
      if (at(j, "+%}") || at(j, "-%}")) close_sign = src_[j++];
      if (!at(j, "%}")) continue;
      push_data(body, data_before(body, t, sign, true));
      pos_ = after_tag_end(j, close_sign);
      line_starting_ = src_[pos_ - 1] == '\n';
      return true;
    }
    error_at(inside, "Missing end of raw directive");
  }

  // Tokens inside {{ }} or {% %} up to the end tag.
  void lex_tag(bool variable) {
    std::vector<char> balance;
    while (true) {
      pos_ += space_run(src_, pos_);
      if (pos_ >= src_.size()) return;  // the parser reports the missing end
      if (balance.empty() && lex_tag_end(variable)) return;
      const size_t start = pos_;
      const char c = src_[pos_];
      if (is_digit(c)) {
        lex_number(start);
      } else if (is_name_start(c)) {
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        push(TokenType::name, start, src_.substr(start, pos_ - start));
      } else if (c == '\'' || c == '"') {
        lex_string(start);
      } else {
        lex_operator(start, balance);
      }
    }
  }

  bool lex_tag_end(bool variable) {
    const std::string_view close = variable ? "}}" : "%}";
    char sign = 0;
    size_t at_close = pos_;
    if (src_[pos_] == '-' || (!variable && src_[pos_] == '+')) {
      if (!at(pos_ + 1, close)) return false;
      sign = src_[pos_];
      at_close = pos_ + 1;
    } else if (!at(pos_, close)) {
      return false;
    }
    push(variable ? TokenType::variable_end : TokenType::block_end, pos_);
    if (variable)
      pos_ = at_close + 2 + (sign == '-' ? space_run(src_, at_close + 2) : 0);
    else
      pos_ = after_tag_end(at_close, sign);
    line_starting_ = src_[pos_ - 1] == '\n';
    return true;
  }

  // Digits with optional single underscores between them.
  size_t digits_at(size_t i, int base = 10) const {
    const size_t start = i;
    while (i < src_.size()) {
      const char c = src_[i];
      const int d = hex_digit(c);
      if (d >= 0 && d < base) {
        ++i;
      } else if (c == '_' && i > start && i + 1 < src_.size() && hex_digit(src_[i + 1]) >= 0 &&
                 hex_digit(src_[i + 1]) < base) {
        ++i;
      } else {
        break;
      }
    }
    return i - start;
  }

  static std::string without_underscores(std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '_') out += c;
    return out;
  }

  void lex_number(size_t start) {
    // jinja2's float_re first: digits then a fraction and/or an exponent; not right after a '.'.
    const size_t whole = digits_at(start);
    size_t i = start + whole;
    bool is_float = false;
    if (start == 0 || src_[start - 1] != '.') {
      size_t j = i;
      bool fraction = false;
      if (j < src_.size() && src_[j] == '.' && j + 1 < src_.size() && is_digit(src_[j + 1])) {
        j += 1 + digits_at(j + 1);
        fraction = true;
      }
      size_t k = j;
      bool exponent = false;
      if (k < src_.size() && (src_[k] == 'e' || src_[k] == 'E')) {
        ++k;
        if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < src_.size() && is_digit(src_[k])) {
          k += digits_at(k);
          exponent = true;
        }
      }
      if (exponent) {
        i = k;
        is_float = true;
      } else if (fraction) {
        i = j;
        is_float = true;
      }
    }
    if (is_float) {
      pos_ = i;
      push(TokenType::floating, start, src_.substr(start, i - start)).floating =
          std::strtod(without_underscores(src_.substr(start, i - start)).c_str(), nullptr);
      return;
    }
    int base = 10;
    size_t digits_start = start;
    if (src_[start] == '0' && start + 1 < src_.size()) {
      const char p = char(src_[start + 1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
      if (base != 10) {
        digits_start = start + 2;
        if (digits_start < src_.size() && src_[digits_start] == '_') ++digits_start;
      }
    }
    size_t end = base == 10 ? start + whole : digits_start + digits_at(digits_start, base);
    if (base != 10 && end == digits_start) {  // "0x" with no digits: the integer 0, then a name
      base = 10;
      end = start + 1;
    }
    if (base == 10 && src_[start] == '0') {  // decimal zero: 0(_?0)*
      end = start + 1;
      while (end < src_.size() &&
             (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0')))
        ++end;
    }
    const std::string digits =
        without_underscores(src_.substr(base == 10 ? start : digits_start, end - (base == 10 ? start : digits_start)));
    uint64_t v = 0;
    for (char c : digits) {
      const uint64_t next = v * uint64_t(base) + uint64_t(hex_digit(c));
      if (next / uint64_t(base) != v || next > uint64_t(INT64_MAX)) error_at(start, "integer literal too large");
      v = next;
    }
    pos_ = end;
    push(TokenType::integer, start, src_.substr(start, end - start)).integer = int64_t(v);
  }

  void lex_string(size_t start) {
    const char quote = src_[start];
    size_t i = start + 1;
    while (i < src_.size() && src_[i] != quote) i += src_[i] == '\\' ? 2 : 1;
    if (i >= src_.size()) error_at(start, unexpected_char(start, std::string(1, quote)));
    std::string value, error;
    if (!unescape_string_literal(std::string_view(src_).substr(start + 1, i - start - 1), value, error))
      error_at(start, error);
    pos_ = i + 1;
    push(TokenType::string, start, std::move(value));
  }

  void lex_operator(size_t start, std::vector<char>& balance) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (at(start, op)) {
        pos_ = start + 2;
        push(TokenType::op, start, std::string(op));
        return;
      }
    }
    const char c = src_[start];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      size_t j = start;
      std::string ch;
      append_utf8(ch, next_code_point(src_, j));
      error_at(start, unexpected_char(start, ch));
    }
    if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) error_at(start, std::string("unexpected '") + c + "'");
      if (balance.back() != c)
        error_at(start, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    pos_ = start + 1;
    push(TokenType::op, start, std::string(1, c));
  }
};

// jinja2's preprocessing: \r\n and \r become \n; one trailing newline is dropped.
std::string normalized(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name) {
  return Lexer(normalized(source), template_name).run();
}

}  // namespace ls::tok::jinja
