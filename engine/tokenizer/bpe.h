#pragma once
// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}) with HF `tokenizers` semantics:
// a word starts as its characters' ids (byte_fallback: unknown characters as <0xNN> tokens; else the
// unk token, fused when fuse_unk), then merges apply lowest rank first (leftmost among equal ranks);
// ignore_merges: a word that is itself in the vocab is that one token. Results for words shorter than
// 256 bytes are cached (bounded, shared by threads).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_fields.h"

namespace ls::tok {

// The largest token id accepted anywhere (real vocabularies stay below 300,000).
inline constexpr int64_t kMaxTokenId = (1 << 24) - 1;

class Bpe {
 public:
  // Throws ls::Error naming the file and the item: a merge naming a token missing from the vocab, ...
  static Bpe from_json(const Json& model, const Where& w);
  Bpe();  // an empty vocab
  Bpe(Bpe&&) noexcept;
  Bpe& operator=(Bpe&&) noexcept;
  ~Bpe();

  // Appends the ids of `word` (one pre-tokenized word) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string_view id_to_token(int32_t id) const;  // "" for ids outside the vocab
  size_t id_limit() const { return id_to_token_.size(); }  // max id + 1

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct MergeTable;  // (left id, right id) -> (rank, merged id)
  struct Cache;

  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::unique_ptr<MergeTable> merges_;
  std::unique_ptr<Cache> cache_;
  std::array<int32_t, 256> byte_ids_;  // byte_fallback: id of "<0xNN>", -1 if missing
  std::optional<int32_t> unk_id_;
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
};

}  // namespace ls::tok
