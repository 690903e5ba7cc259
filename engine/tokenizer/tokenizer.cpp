#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pipeline.h"

namespace ls::tok {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct AddedToken {
  int32_t id;
  std::string content;
  bool single_word, lstrip, rstrip, normalized, special;
};

// The post-processor's single-sequence template: ids before and after the text.
struct Template {
  std::vector<int32_t> before, after;
};

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

}  // namespace

struct Tokenizer::Impl {
  fs::path source;
  std::unique_ptr<Bpe> bpe;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  Template post;
  std::vector<AddedToken> added;  // longest content first
  std::unordered_map<int32_t, size_t> added_by_id;
  Vocab added_by_content;
  std::optional<int32_t> bos, eos, pad;
  size_t vocab_size = 0;
  std::array<bool, 256> added_first_byte{};  // bytes an added token can start with (a fast skip)

  // Leftmost-longest match of an added token (of the given normalized kind) at or after `from`.
  // Returns (begin, end, token index) of the whole match including lstrip/rstrip whitespace.
  bool find_added(std::string_view text, size_t from, bool normalized, size_t* b, size_t* e, size_t* which) const {
    for (size_t i = from; i < text.size(); ++i) {
      if (!added_first_byte[static_cast<unsigned char>(text[i])]) continue;
      for (size_t k = 0; k < added.size(); ++k) {
        const AddedToken& t = added[k];
        if (t.normalized != normalized || t.content.empty()) continue;
        if (text.compare(i, t.content.size(), t.content) != 0) continue;
        size_t mb = i, me = i + t.content.size();
        if (t.single_word) {
          if (mb > 0 && is_word_byte(static_cast<unsigned char>(text[mb - 1]))) continue;
          if (me < text.size() && is_word_byte(static_cast<unsigned char>(text[me]))) continue;
        }
        if (t.lstrip)
          while (mb > from && is_space(static_cast<unsigned char>(text[mb - 1]))) --mb;
        if (t.rstrip)
          while (me < text.size() && is_space(static_cast<unsigned char>(text[me]))) ++me;
        *b = mb, *e = me, *which = k;
        return true;  // tokens are sorted longest first: the first hit here is the longest
      }
    }
    return false;
  }

  void encode_plain(std::string_view piece, bool first, std::vector<int32_t>& out) const {
    // Normalized added tokens are matched in the normalized text.
    std::string norm = apply(normalizer, piece);
    size_t pos = 0, b, e, k;
    std::string_view n = norm;
    bool piece_first = first;
    while (find_added(n, pos, true, &b, &e, &k)) {
      for (const auto& w : pre_tokenize(pre_tokenizer, n.substr(pos, b - pos), piece_first)) bpe->encode_word(w, out);
      out.push_back(added[k].id);
      pos = e;
      piece_first = false;
    }
    for (const auto& w : pre_tokenize(pre_tokenizer, n.substr(pos), piece_first)) bpe->encode_word(w, out);
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::load(const fs::path& where) {
  const fs::path path = fs::is_directory(where) ? where / "tokenizer.json" : where;
  if (!fs::exists(path)) throw Error(path.string() + ": no such file (the model folder needs its tokenizer.json)");
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  const std::string src = path.string();
  const json j = read_json(path);
  try {
    if (!j.is_object()) throw Error(src + ": not a JSON object");
    if (!j.contains("model")) throw Error(src + ": missing \"model\"");
    impl->bpe = std::make_unique<Bpe>(Bpe::from_json(j["model"], src));
    impl->normalizer = parse_normalizer(j.value("normalizer", json()), src);
    impl->pre_tokenizer = parse_pre_tokenizer(j.value("pre_tokenizer", json()), src);
    impl->decoder = parse_decoder(j.value("decoder", json()), src);
    for (const auto& a : j.value("added_tokens", json::array())) {
      AddedToken t{a.at("id").get<int32_t>(), a.at("content").get<std::string>(), a.value("single_word", false),
                   a.value("lstrip", false), a.value("rstrip", false), a.value("normalized", false),
                   a.value("special", false)};
      if (t.id < 0) throw Error(src + ": added token \"" + t.content + "\" has a negative id");
      impl->added_by_id[t.id] = impl->added.size();
      impl->added_by_content[t.content] = t.id;
      impl->added.push_back(std::move(t));
    }
    // Post-processor: TemplateProcessing's single template (ByteLevel ones only trim offsets).
    auto post_steps = json::array();
    if (auto p = j.value("post_processor", json()); p.is_object())
      post_steps = p.value("type", std::string()) == "Sequence" ? p.at("processors") : json::array({p});
    for (const auto& p : post_steps) {
      const auto type = p.value("type", std::string());
      if (type == "ByteLevel") continue;
      if (type != "TemplateProcessing") throw Error(src + ": post_processor \"" + type + "\" is not supported");
      bool seen_sequence = false;
      for (const auto& item : p.at("single")) {
        if (item.contains("Sequence")) {
          seen_sequence = true;
          continue;
        }
        const auto name = item.at("SpecialToken").at("id").get<std::string>();
        const auto& ids = p.at("special_tokens").at(name).at("ids");
        auto& dst = seen_sequence ? impl->post.after : impl->post.before;
        for (const auto& id : ids) dst.push_back(id.get<int32_t>());
      }
    }
  } catch (const json::exception& e) {
    throw Error(src + ": unexpected content: " + e.what());
  }
  // Longest first, so the first match at a position is the longest (leftmost-longest).
  std::vector<size_t> order(impl->added.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return impl->added[a].content.size() > impl->added[b].content.size(); });
  std::vector<AddedToken> sorted;
  for (size_t i : order) sorted.push_back(impl->added[i]);
  impl->added = std::move(sorted);
  impl->added_by_id.clear();
  for (size_t i = 0; i < impl->added.size(); ++i) {
    impl->added_by_id[impl->added[i].id] = i;
    if (!impl->added[i].content.empty()) impl->added_first_byte[static_cast<unsigned char>(impl->added[i].content[0])] = true;
  }
  impl->vocab_size = impl->bpe->tokens().size();
  for (const auto& t : impl->added) impl->vocab_size = std::max(impl->vocab_size, size_t(t.id) + 1);

  // bos/eos/pad from tokenizer_config.json next to it (strings or {"content": ...}).
  const fs::path config = path.parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) {
    const json c = read_json(config);
    Tokenizer probe(std::move(impl));
    auto special = [&](const char* key) -> std::optional<int32_t> {
      if (!c.is_object() || !c.contains(key) || c[key].is_null()) return std::nullopt;
      const json& v = c[key];
      std::string content = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
      auto id = probe.token_id(content);
      if (!id) throw Error(config.string() + ": " + key + " \"" + content + "\" is not a token of " + src);
      return id;
    };
    probe.impl_->bos = special("bos_token");
    probe.impl_->eos = special("eos_token");
    probe.impl_->pad = special("pad_token");
    return probe;
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> out;
  if (add_special_tokens) out = impl_->post.before;
  size_t pos = 0, b, e, k;
  while (impl_->find_added(text, pos, false, &b, &e, &k)) {
    if (b > pos) impl_->encode_plain(text.substr(pos, b - pos), pos == 0, out);
    out.push_back(impl_->added[k].id);
    pos = e;
  }
  if (pos < text.size()) impl_->encode_plain(text.substr(pos), pos == 0, out);
  if (add_special_tokens) out.insert(out.end(), impl_->post.after.begin(), impl_->post.after.end());
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) {
      if (skip_special_tokens && impl_->added[it->second].special) continue;
      tokens.push_back(impl_->added[it->second].content);
    } else if (id >= 0 && size_t(id) < impl_->bpe->tokens().size() && !impl_->bpe->tokens()[size_t(id)].empty()) {
      tokens.push_back(impl_->bpe->tokens()[size_t(id)]);
    }
  }
  if (impl_->decoder.empty()) {  // HF joins with spaces when there is no decoder
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  return decode_tokens(impl_->decoder, std::move(tokens));
}

std::string_view Tokenizer::token(int32_t id) const {
  if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) return impl_->added[it->second].content;
  if (id >= 0 && size_t(id) < impl_->bpe->tokens().size()) return impl_->bpe->tokens()[size_t(id)];
  return {};
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) return it->second;
  return impl_->bpe->id(token);
}

bool Tokenizer::is_special(int32_t id) const {
  auto it = impl_->added_by_id.find(id);
  return it != impl_->added_by_id.end() && impl_->added[it->second].special;
}

size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }
const fs::path& Tokenizer::source() const { return impl_->source; }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::span<const int32_t> all(ids_);
  const std::string before = tok_.decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string now = tok_.decode(all.subspan(prefix_), skip_special_);
  const bool incomplete = now.size() >= 3 && now.compare(now.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  if (now.size() > before.size() && !incomplete) {
    std::string out = now.substr(before.size());
    prefix_ = read_;
    read_ = ids_.size();
    // Forget what no later decode needs (the window keeps the context a decoder's Strip/Metaspace needs).
    if (prefix_ > 64) {
      ids_.erase(ids_.begin(), ids_.begin() + ptrdiff_t(prefix_));
      read_ -= prefix_;
      prefix_ = 0;
    }
    return out;
  }
  return {};
}

std::string StreamDecoder::flush() {
  std::span<const int32_t> all(ids_);
  const std::string before = tok_.decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string now = tok_.decode(all.subspan(prefix_), skip_special_);
  prefix_ = read_ = ids_.size();
  return now.size() > before.size() ? now.substr(before.size()) : std::string();
}

}  // namespace ls::tok
