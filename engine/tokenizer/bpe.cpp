#include "tokenizer/bpe.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <utility>

#include "error.h"
#include "tokenizer/utf8.h"

namespace ls::tok {

// Open addressing with linear probing over (left << 32 | right) keys: merges are looked up for
// every pair of every new word, and this is several times faster than std::unordered_map.
struct Bpe::MergeTable {
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged = 0;
  };
  std::vector<Slot> slots;
  uint64_t mask = 0;
  int shift = 0;

  explicit MergeTable(size_t n) {
    size_t cap = std::bit_ceil(std::max<size_t>(16, n * 2));
    slots.resize(cap);
    mask = cap - 1;
    shift = 64 - std::countr_zero(cap);
  }
  static uint64_t key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  size_t home(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> shift); }
  // Later merges of the same pair replace earlier ones, as HF's map collection does.
  void put(int32_t a, int32_t b, uint32_t rank, int32_t merged) {
    uint64_t k = key(a, b);
    for (size_t i = home(k);; i = (i + 1) & mask) {
      if (slots[i].key == kEmpty || slots[i].key == k) {
        slots[i] = {k, rank, merged};
        return;
      }
    }
  }
  const Slot* find(int32_t a, int32_t b) const {
    uint64_t k = key(a, b);
    for (size_t i = home(k);; i = (i + 1) & mask) {
      if (slots[i].key == k) return &slots[i];
      if (slots[i].key == kEmpty) return nullptr;
    }
  }
};

// Words already tokenized, in shards with a lock each; a full shard takes no more words (as HF's cache).
struct Bpe::Cache {
  static constexpr size_t kShards = 16, kWordsPerShard = 4096, kMaxWordBytes = 256;
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  std::array<Shard, kShards> shards;
  Shard& shard(std::string_view w) { return shards[StringHash{}(w) % kShards]; }
};

Bpe::Bpe() : merges_(std::make_unique<MergeTable>(0)), cache_(std::make_unique<Cache>()) { byte_ids_.fill(-1); }
Bpe::Bpe(Bpe&&) noexcept = default;
Bpe& Bpe::operator=(Bpe&&) noexcept = default;
Bpe::~Bpe() = default;

Bpe Bpe::from_json(const Json& model, const Where& w) {
  Bpe bpe;
  if (const Json* dropout = optional_member(model, "dropout", w)) {
    if (!dropout->is_number()) w.at("dropout").fail("expected a number or null");
    if (dropout->get<double>() > 0) w.at("dropout").fail("BPE dropout is not supported");
  }

  const Json& vocab = member(model, "vocab", w);
  if (!vocab.is_object()) w.at("vocab").fail("expected an object of token -> id");
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxTokenId) {
      w.at("vocab").fail("token \"" + it.key() + "\": id must be an integer in [0, " + std::to_string(kMaxTokenId) + "]");
    }
    max_id = std::max(max_id, it->get<int64_t>());
  }
  // Ids index a table: a file whose ids are mostly holes would make it needlessly large.
  if (max_id >= int64_t(2 * vocab.size() + 1024)) {
    w.at("vocab").fail("ids go up to " + std::to_string(max_id) + " for " + std::to_string(vocab.size()) +
                       " tokens: too sparse");
  }
  bpe.id_to_token_.resize(size_t(max_id + 1));
  bpe.vocab_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    int32_t id = int32_t(it->get<int64_t>());
    bpe.id_to_token_[size_t(id)] = it.key();
    bpe.vocab_.emplace(it.key(), id);
  }

  auto optional_string = [&](const char* key) -> std::string {
    const Json* v = optional_member(model, key, w);
    if (!v) return "";
    if (!v->is_string()) w.at(key).fail("expected a string or null");
    return v->get<std::string>();
  };
  bpe.prefix_ = optional_string("continuing_subword_prefix");
  bpe.suffix_ = optional_string("end_of_word_suffix");
  bpe.byte_fallback_ = bool_member(model, "byte_fallback", w, false);
  bpe.fuse_unk_ = bool_member(model, "fuse_unk", w, false);
  bpe.ignore_merges_ = bool_member(model, "ignore_merges", w, false);
  if (std::string unk = optional_string("unk_token"); !unk.empty()) {
    bpe.unk_id_ = bpe.token_to_id(unk);
    if (!bpe.unk_id_) w.at("unk_token").fail("\"" + unk + "\" is not in the vocab");
  }
  if (bpe.byte_fallback_) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      bpe.byte_ids_[size_t(b)] = bpe.token_to_id(name).value_or(-1);
    }
  }

  const Json& merges = member(model, "merges", w);
  if (!merges.is_array()) w.at("merges").fail("expected an array");
  bpe.merges_ = std::make_unique<MergeTable>(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& m = merges[i];
    std::string a, b;
    if (m.is_string()) {  // "a b"
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        w.at("merges").at(i).fail("\"" + s + "\" is not two tokens separated by one space");
      }
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      w.at("merges").at(i).fail("expected \"a b\" or [\"a\", \"b\"]");
    }
    std::string merged = a + (b.starts_with(bpe.prefix_) ? b.substr(bpe.prefix_.size()) : b);
    auto ia = bpe.token_to_id(a), ib = bpe.token_to_id(b), im = bpe.token_to_id(merged);
    for (auto [name, id] : {std::pair{&a, ia}, std::pair{&b, ib}, std::pair{&merged, im}}) {
      if (!id) w.at("merges").at(i).fail("token \"" + *name + "\" is not in the vocab");
    }
    bpe.merges_->put(*ia, *ib, uint32_t(i), *im);
  }
  return bpe;
}

std::optional<int32_t> Bpe::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

std::string_view Bpe::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= id_to_token_.size()) return {};
  return id_to_token_[size_t(id)];
}

void Bpe::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  bool cacheable = word.size() < Cache::kMaxWordBytes;
  if (cacheable) {
    Cache::Shard& shard = cache_->shard(word);
    std::lock_guard lock(shard.mutex);
    auto it = shard.words.find(word);
    if (it != shard.words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    Cache::Shard& shard = cache_->shard(word);
    std::lock_guard lock(shard.mutex);
    if (shard.words.size() < Cache::kWordsPerShard) {
      shard.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + std::ptrdiff_t(first), out.end()));
    }
  }
}

void Bpe::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // neighbours in the word, -1 at the ends
    uint32_t len;        // bytes covered; 0 once merged into its left neighbour
  };
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  auto add = [&](int32_t id, size_t len) {
    int32_t n = int32_t(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, uint32_t(len)});
  };

  // Initial symbols: one per character; unknown characters as bytes or (fused) unk.
  int32_t unk = -1;  // a pending unk symbol (fused with the next unknown characters when fuse_unk)
  size_t unk_len = 0;
  std::string with_affixes;
  for (size_t i = 0; i < word.size();) {
    size_t n = std::min(utf8_length(static_cast<unsigned char>(word[i])), word.size() - i);
    std::string_view s = word.substr(i, n);
    bool is_first = i == 0, is_last = i + n == word.size();
    i += n;
    if ((!is_first && !prefix_.empty()) || (is_last && !suffix_.empty())) {
      with_affixes.assign(is_first ? "" : prefix_);
      with_affixes += s;
      if (is_last) with_affixes += suffix_;
      s = with_affixes;
    }
    if (auto id = token_to_id(s)) {
      if (unk >= 0) { add(unk, unk_len); unk = -1; }
      add(*id, n);
      continue;
    }
    if (byte_fallback_ && std::all_of(s.begin(), s.end(), [&](char c) { return byte_ids_[uint8_t(c)] >= 0; })) {
      for (char c : s) add(byte_ids_[uint8_t(c)], 1);
      continue;
    }
    if (unk_id_) {
      if (unk >= 0 && fuse_unk_) {
        unk_len += n;
      } else {
        if (unk >= 0) add(unk, unk_len);
        unk = *unk_id_;
        unk_len = n;
      }
    }
    // No unk token: the character is dropped, as HF does.
  }
  if (unk >= 0) add(unk, unk_len);

  // Merges, lowest (rank, position) first; entries made stale by an earlier merge are skipped.
  struct Merge {
    uint32_t rank;
    int32_t pos;
    int32_t merged;
  };
  auto later = [](const Merge& a, const Merge& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
  thread_local std::vector<Merge> queue;
  queue.clear();
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const auto* m = merges_->find(symbols[i].id, symbols[i + 1].id)) {
      queue.push_back({m->rank, int32_t(i), m->merged});
    }
  }
  std::make_heap(queue.begin(), queue.end(), later);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    Merge top = queue.back();
    queue.pop_back();
    Symbol& cur = symbols[size_t(top.pos)];
    if (cur.len == 0 || cur.next == -1) continue;
    int32_t next_pos = cur.next;
    Symbol right = symbols[size_t(next_pos)];
    const auto* m = merges_->find(cur.id, right.id);
    if (!m || m->merged != top.merged) continue;

    cur.id = top.merged;
    cur.len += right.len;
    cur.next = right.next;
    symbols[size_t(next_pos)].len = 0;
    if (right.next >= 0) symbols[size_t(right.next)].prev = top.pos;

    if (cur.prev >= 0) {
      if (const auto* p = merges_->find(symbols[size_t(cur.prev)].id, cur.id)) {
        queue.push_back({p->rank, cur.prev, p->merged});
        std::push_heap(queue.begin(), queue.end(), later);
      }
    }
    if (cur.next >= 0) {
      if (const auto* p = merges_->find(cur.id, symbols[size_t(cur.next)].id)) {
        queue.push_back({p->rank, top.pos, p->merged});
        std::push_heap(queue.begin(), queue.end(), later);
      }
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.push_back(s.id);
  }
}

}  // namespace ls::tok
