#pragma once
// Hugging Face tokenizer.json (the `tokenizers` format), read and applied as HF `tokenizers` does:
// added tokens matched first in the raw text, then per remaining piece the normalizer, the
// pre-tokenizer (regex Split with PCRE2 in UTF + UCP mode, ByteLevel mapping, Metaspace) and the BPE
// model; the post-processor's special tokens on request. Both BPE flavours users' folders carry work:
// byte-level (Qwen, Llama 3, SmolLM2, GPT-2) and SentencePiece-style with byte fallback (Llama 2,
// TinyLlama, Mistral). decode() is HF's decode; StreamDecoder gives whole characters while generating.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

class Tokenizer {
 public:
  // A model folder (tokenizer.json, and tokenizer_config.json when present for bos/eos/pad) or the
  // path of a tokenizer.json.
  static Tokenizer load(const std::filesystem::path& model_dir_or_tokenizer_json);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  std::string_view token(int32_t id) const;  // the vocab or added-token string ("" if none)
  std::optional<int32_t> token_id(std::string_view token) const;
  bool is_special(int32_t id) const;
  size_t vocab_size() const;  // max id + 1 over the vocab and the added tokens
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  const std::filesystem::path& source() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streaming decode for generation, as HF's DecodeStream: text is released once the decoded suffix no
// longer ends in an incomplete character (U+FFFD); never half a character.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = true);
  std::string push(int32_t id);
  std::string flush();  // what is still held back (possibly with U+FFFD for bytes that never completed)

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0, read_ = 0;
};

}  // namespace ls::tok
