#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "error.h"
#include "tokenizer/unicode.h"

namespace ls::tok {

namespace {
constexpr size_t kCacheLimit = 100000;

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

std::string optional_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? std::string() : it->get<std::string>();
}
}  // namespace

Bpe::Bpe(Bpe&& o) noexcept
    : vocab_(std::move(o.vocab_)),
      id_to_token_(std::move(o.id_to_token_)),
      merges_(std::move(o.merges_)),
      unk_(o.unk_),
      fuse_unk_(o.fuse_unk_),
      byte_fallback_(o.byte_fallback_),
      ignore_merges_(o.ignore_merges_),
      continuing_subword_prefix_(std::move(o.continuing_subword_prefix_)),
      end_of_word_suffix_(std::move(o.end_of_word_suffix_)) {}

Bpe Bpe::from_json(const nlohmann::json& m, const std::string& source) {
  auto fail = [&](const std::string& what) { throw Error(source + ": model: " + what); };
  if (!m.is_object()) fail("not an object");
  if (m.value("type", std::string("BPE")) != "BPE")
    fail("type \"" + m.value("type", std::string()) + "\" is not supported (only BPE)");
  if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0)
    fail("BPE dropout is not supported");
  Bpe bpe;
  const auto vocab = m.find("vocab");
  if (vocab == m.end() || !vocab->is_object()) fail("\"vocab\" missing or not an object");
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > (1 << 24))
      fail("vocab entry \"" + token + "\" has a bad id");
    const auto i = id.get<int32_t>();
    bpe.vocab_.emplace(token, i);
    if (size_t(i) >= bpe.id_to_token_.size()) bpe.id_to_token_.resize(size_t(i) + 1);
    bpe.id_to_token_[size_t(i)] = token;
  }
  const auto merges = m.find("merges");
  if (merges == m.end() || !merges->is_array()) fail("\"merges\" missing or not a list");
  int32_t rank = 0;
  for (const auto& merge : *merges) {
    std::string a, b;
    if (merge.is_string()) {  // "a b"
      const auto s = merge.get<std::string>();
      const auto space = s.find(' ', 1);
      if (space == std::string::npos) fail("merge \"" + s + "\" is not two tokens separated by a space");
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      a = merge[0].get<std::string>();
      b = merge[1].get<std::string>();
    } else {
      fail("merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto ia = bpe.vocab_.find(a), ib = bpe.vocab_.find(b);
    if (ia == bpe.vocab_.end() || ib == bpe.vocab_.end())
      fail("merge " + std::to_string(rank) + " (\"" + a + "\", \"" + b + "\") names a token missing from the vocab");
    std::string merged = a + b.substr(std::min(b.size(), bpe.continuing_subword_prefix_.size()));
    const auto im = bpe.vocab_.find(merged);
    if (im == bpe.vocab_.end()) fail("merge " + std::to_string(rank) + " makes \"" + merged + "\", missing from the vocab");
    bpe.merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank, im->second));
    ++rank;
  }
  if (auto unk = optional_string(m, "unk_token"); !unk.empty()) {
    const auto it = bpe.vocab_.find(unk);
    if (it == bpe.vocab_.end()) fail("unk_token \"" + unk + "\" is not in the vocab");
    bpe.unk_ = it->second;
  }
  bpe.fuse_unk_ = m.value("fuse_unk", false);
  bpe.byte_fallback_ = m.value("byte_fallback", false);
  bpe.ignore_merges_ = m.value("ignore_merges", false);
  bpe.continuing_subword_prefix_ = optional_string(m, "continuing_subword_prefix");
  bpe.end_of_word_suffix_ = optional_string(m, "end_of_word_suffix");
  if (!bpe.continuing_subword_prefix_.empty() || !bpe.end_of_word_suffix_.empty())
    fail("continuing_subword_prefix / end_of_word_suffix are not supported");
  return bpe;
}

std::optional<int32_t> Bpe::id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void Bpe::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (word.size() < 256) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheLimit) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

void Bpe::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  // Symbols: one per character (or per byte, through <0xNN>, when the character is not in the vocab
  // and byte_fallback is on; else the unk token, consecutive ones fused when fuse_unk).
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // linked list over positions; -1 at the ends
    bool alive;
  };
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  auto push = [&](int32_t id) {
    int32_t i = int32_t(sym.size());
    sym.push_back({id, i - 1, -1, true});
    if (i > 0) sym[size_t(i) - 1].next = i;
  };
  bool last_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = std::min(utf8_length(static_cast<unsigned char>(word[i])), word.size() - i);
    std::string_view ch = word.substr(i, n);
    i += n;
    if (auto it = vocab_.find(ch); it != vocab_.end()) {
      push(it->second);
      last_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      std::vector<int32_t> bytes;
      for (unsigned char b : ch) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        auto it = vocab_.find(std::string_view(name));
        if (it == vocab_.end()) {
          all = false;
          break;
        }
        bytes.push_back(it->second);
      }
      if (all) {
        for (int32_t b : bytes) push(b);
        last_unk = false;
        continue;
      }
    }
    if (unk_) {
      if (!(fuse_unk_ && last_unk)) push(*unk_);
      last_unk = true;
    }
    // (no unk token: the character is dropped, as HF does)
  }
  // Merge by rank with a priority queue of candidate pairs (rank, left position).
  using Candidate = std::pair<int32_t, int32_t>;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = sym[size_t(left)].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(sym[size_t(left)].id, sym[size_t(right)].id));
    if (it != merges_.end()) queue.push({it->second.first, left});
  };
  for (int32_t i = 0; i + 1 < int32_t(sym.size()); ++i) consider(i);
  while (!queue.empty()) {
    auto [rank, left] = queue.top();
    queue.pop();
    Symbol& l = sym[size_t(left)];
    if (!l.alive || l.next < 0) continue;
    Symbol& r = sym[size_t(l.next)];
    auto it = merges_.find(pair_key(l.id, r.id));
    if (it == merges_.end() || it->second.first != rank) continue;  // stale candidate
    l.id = it->second.second;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = left;
    consider(l.prev);
    consider(left);
  }
  for (const auto& s : sym)
    if (s.alive) out.push_back(s.id);
}

}  // namespace ls::tok
