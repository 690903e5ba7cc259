#pragma once
// The steps of tokenizer.json around the BPE model, read from the file: normalizers, pre-tokenizers,
// decoders. Each is a small value type applied in sequence, as HF `tokenizers` applies them.
// Unsupported components are refused at load with an error naming the file and the component.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/unicode.h"

typedef struct pcre2_real_code_8 pcre2_code_8;

namespace ls::tok {

// A compiled PCRE2 pattern (UTF + UCP), shared and immutable.
class Regex {
 public:
  Regex(const std::string& pattern, const std::string& source);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Byte ranges [begin, end) of the successive non-overlapping matches in text.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  pcre2_code_8* code_ = nullptr;
  bool jit_ = false;
};

struct NormalizerStep {
  enum class Kind { Unicode, Prepend, Replace, Lowercase } kind;
  NormalForm form = NormalForm::NFC;
  std::string a, b;                    // Prepend: a; Replace: a -> b (literal)
  std::shared_ptr<const Regex> regex;  // Replace with a regex pattern
};
using Normalizer = std::vector<NormalizerStep>;
Normalizer parse_normalizer(const nlohmann::json& j, const std::string& source);
std::string apply(const Normalizer& n, std::string_view text);

struct PreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace } kind;
  std::shared_ptr<const Regex> regex;  // Split; ByteLevel with use_regex (GPT-2's pattern)
  enum class Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous } behavior =
      Behavior::Isolated;
  bool invert = false;
  bool add_prefix_space = false;       // ByteLevel
  std::string replacement = "\xE2\x96\x81";  // Metaspace: U+2581
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool split = true;                   // Metaspace
};
using PreTokenizer = std::vector<PreTokenizerStep>;
PreTokenizer parse_pre_tokenizer(const nlohmann::json& j, const std::string& source);
// Splits a normalized piece into words, byte-level mapping included. first: the piece starts the
// text (Metaspace's prepend_scheme "first").
std::vector<std::string> pre_tokenize(const PreTokenizer& p, std::string_view text, bool first);

struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
  std::string a, b;          // Replace a -> b; Strip: content a
  size_t start = 0, stop = 0;  // Strip
  std::string replacement = "\xE2\x96\x81";
  bool prepend = true;       // Metaspace: strip the space it prepended to the first token
};
using Decoder = std::vector<DecoderStep>;
Decoder parse_decoder(const nlohmann::json& j, const std::string& source);
// HF decode_chain: token strings in, one string out (joined).
std::string decode_tokens(const Decoder& d, std::vector<std::string> tokens);

}  // namespace ls::tok
