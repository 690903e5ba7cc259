#pragma once
// Tokenizer: HF `tokenizers` tokenizer.json, read as a pipeline and run with the same results as the
// Rust library: added tokens matched in the raw text -> normalizer -> pre-tokenizer -> BPE ->
// post-processor; decode through the file's decoder. Both BPE flavours of model folders work:
// byte-level (Qwen2.5/Qwen3, Llama 3, GPT-2 family) and SentencePiece-style (Llama 2, TinyLlama,
// Mistral). A component this code does not implement is an ls::Error naming the file and component.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

class Tokenizer {  // move-only, immutable after load, safe to use from several threads
 public:
  // A model folder (its tokenizer.json) or a tokenizer.json. tokenizer_config.json beside it, when
  // present, gives bos/eos/pad tokens (strings or {"content": ...} objects), add_bos_token and
  // chat_template. Throws ls::Error naming the file and the problem.
  static Tokenizer load(const std::filesystem::path& model_dir_or_tokenizer_json);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // `text` must be valid UTF-8 (ls::Error with the byte offset otherwise). add_special_tokens applies
  // the post-processor as HF does (Llama 2: BOS first; Qwen: nothing).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Exactly HF's decode: ids outside the vocab are dropped, skip_special_tokens drops special added
  // tokens, invalid UTF-8 from byte tokens becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::string_view token(int32_t id) const;                      // "" if out of range
  std::optional<int32_t> token_id(std::string_view token) const;  // vocab or added token
  bool is_special(int32_t id) const;  // a special added token (skipped by skip_special_tokens)
  size_t vocab_size() const;          // max id + 1 over vocab and added tokens
  std::optional<int32_t> bos_id() const;  // from tokenizer_config.json
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  std::optional<bool> add_bos_token() const;       // tokenizer_config.json's add_bos_token, if set
  std::optional<std::string> chat_template() const;  // tokenizer_config.json's (the "default" of a list)
  const std::filesystem::path& source() const;     // the tokenizer.json read

 private:
  friend class StreamDecoder;
  struct Impl;
  bool joins_with_next(int32_t id) const;  // a <0xNN> token that the decoder joins with the bytes after it
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streaming decode for generation: push ids one at a time, get only complete UTF-8 text (never half
// a character). Bytes that can never become valid UTF-8 come out as U+FFFD, as in decode(). The
// pieces joined equal decode() of all ids pushed.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& t, bool skip_special_tokens = true);
  std::string push(int32_t id);
  // What is held back (an unfinished character as U+FFFD, as decode() gives it); pushing more
  // continues the same text.
  std::string flush();

 private:
  std::string emit(bool final);

  const Tokenizer* tok_;  // must outlive the decoder
  bool skip_special_;
  std::vector<int32_t> ids_;  // ids_[0, read_) decode to the text emitted last; ids_[read_, end) are held
  size_t prefix_ = 0;         // always 0 between calls (ids before the last emitted piece are dropped)
  size_t read_ = 0;
};

}  // namespace ls::tok
