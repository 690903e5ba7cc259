#pragma once
// The BPE model of tokenizer.json: a vocabulary, merges by rank, and the HF options that change how a
// word becomes tokens (ignore_merges, byte_fallback, unk_token with fuse_unk). A word is one
// pre-tokenized piece; its symbols are its Unicode characters, merged pair by pair, lowest rank first,
// leftmost first among equal ranks (HF's Word::merge_all).
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ls::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class Bpe {
 public:
  // model: tokenizer.json's "model" object; source names the file in errors.
  static Bpe from_json(const nlohmann::json& model, const std::string& source);
  Bpe(Bpe&& other) noexcept;
  Bpe& operator=(Bpe&&) = delete;
  Bpe(const Bpe&) = delete;

  // Appends the ids of one word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> id(std::string_view token) const;
  const Vocab& vocab() const { return vocab_; }
  const std::vector<std::string>& tokens() const { return id_to_token_; }  // by id ("" for holes)

 private:
  Bpe() = default;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::optional<int32_t> unk_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::string continuing_subword_prefix_, end_of_word_suffix_;
  // Words seen before (byte-level pre-tokenization repeats them a lot). Bounded.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace ls::tok
