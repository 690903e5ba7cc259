#pragma once
// Helpers of the tokenizer tests: the real tokenizers fetched by scripts/fetch_tokenizers.sh (loaded
// once per process), the fixture files, and printing strings and ids so that a failure shows them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ls::test {

inline std::filesystem::path source_dir() { return LS_SOURCE_DIR; }

inline std::filesystem::path tokenizer_dir(const std::string& name) {
  return source_dir() / ".cache" / "tokenizers" / name;
}

// The real tokenizer `name` (qwen3, llama3, llama2), or nullptr after failing the test with what to run.
inline const tok::Tokenizer* real_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tok::Tokenizer>> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second.get();
  std::filesystem::path dir = tokenizer_dir(name);
  if (!std::filesystem::exists(dir / "tokenizer.json")) {
    ADD_FAILURE() << (dir / "tokenizer.json").string() << " is missing: run scripts/fetch_tokenizers.sh";
    return nullptr;
  }
  auto t = std::make_unique<tok::Tokenizer>(tok::Tokenizer::load(dir));
  return loaded.emplace(name, std::move(t)).first->second.get();
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(p.string() + ": cannot open");
  return nlohmann::json::parse(f);
}

// `s` with control characters, quotes and non-ASCII escaped (\n, \u00e9, \U0001f600).
inline std::string escaped(std::string_view s) {
  std::ostringstream out;
  out << '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') { out << "\\n"; ++i; continue; }
    if (c == '\t') { out << "\\t"; ++i; continue; }
    if (c == '\r') { out << "\\r"; ++i; continue; }
    if (c == '"' || c == '\\') { out << '\\' << char(c); ++i; continue; }
    if (c >= 0x20 && c < 0x7f) { out << char(c); ++i; continue; }
    size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (c >= 0x80 && c < 0xC0) n = 1;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    char buf[16];
    std::snprintf(buf, sizeof(buf), cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
    out << buf;
    i += n;
  }
  out << '"';
  return out.str();
}

inline std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// The ids with their token strings: [9707 "Hello", 11 ","].
inline std::string tokens_text(const tok::Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]) + " " + escaped(t.token(ids[i]));
  return s + "]";
}

}  // namespace ls::test
