#pragma once
// UTF-8 helpers for the tokenizer: code point iteration, encoding, lossy decoding as Rust's
// String::from_utf8_lossy does (what HF tokenizers' decode returns), and Unicode normalisation forms
// through utf8proc.
#include <cstdint>
#include <string>
#include <string_view>

namespace ls::tok {

// Appends the UTF-8 encoding of code point cp.
void append_utf8(std::string& out, char32_t cp);
// Length in bytes of the UTF-8 sequence starting with byte b (1 for invalid lead bytes).
size_t utf8_length(unsigned char b);
// Valid UTF-8 as is; each maximal invalid subsequence becomes U+FFFD (Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);
// True when bytes is valid UTF-8.
bool utf8_valid(std::string_view bytes);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// Unicode normalisation of valid UTF-8 text (utf8proc).
std::string normalize(std::string_view text, NormalForm form);

}  // namespace ls::tok
