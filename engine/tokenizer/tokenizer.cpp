#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "error.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace ls::tok {

struct Tokenizer::Impl {
  std::filesystem::path source;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Bpe model;
  PostProcessor post_processor;
  Decoder decoder;

  std::unordered_map<int32_t, std::string> added_by_id;
  std::unordered_map<std::string, int32_t> added_by_content;
  AddedTokenMatcher raw_matcher;         // added tokens with normalized == false
  AddedTokenMatcher normalized_matcher;  // the others, matched in normalized text
  std::vector<uint8_t> special;          // by id: decodes to a special added token's content
  size_t vocab_size = 0;

  std::optional<int32_t> bos, eos, pad;
  std::optional<bool> add_bos;
  std::optional<std::string> chat_template;

  // The token's string ("" for an id that is neither added nor in the vocab).
  std::string_view token_string(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token) const;
  void encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const;
  // A <0xNN> token that the decoder joins with the byte tokens after it.
  bool joins_with_next(int32_t id) const;

  // Loading. tokenizer.json's model and pipeline components:
  void read_pipeline(const Json& root, const Where& w);
  // Added tokens into the two matchers (special ones first, as HF orders them), the id maps, the
  // vocab size and the ids that decode skips as special.
  void add_added_tokens(std::vector<AddedToken> added);
  // tokenizer_config.json: bos/eos/pad tokens (a name that is not a token gives none), add_bos_token,
  // chat_template (a string, or the "default" of a list of {"name", "template"}).
  void read_config(const Json& config, const std::filesystem::path& path);
};

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string() + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(p.string() + ": cannot read");
  return ss.str();
}

Json parse_json(const std::filesystem::path& p) {
  std::string text = read_file(p);
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(p.string() + ": invalid JSON: " + e.what());
  }
}

std::vector<AddedToken> read_added_tokens(const Json& root, const Where& w) {
  std::vector<AddedToken> out;
  const Json* list = optional_member(root, "added_tokens", w);
  if (!list) return out;
  if (!list->is_array()) w.at("added_tokens").fail("expected an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& j = (*list)[i];
    Where wi = w.at("added_tokens").at(i);
    int64_t id = int_member(j, "id", wi, -1);
    if (id < 0 || id > kMaxTokenId) wi.at("id").fail("expected a token id in [0, " + std::to_string(kMaxTokenId) + "]");
    AddedToken t{.id = int32_t(id),
                 .content = string_member(j, "content", wi),
                 .single_word = bool_member(j, "single_word", wi, false),
                 .lstrip = bool_member(j, "lstrip", wi, false),
                 .rstrip = bool_member(j, "rstrip", wi, false),
                 .normalized = bool_member(j, "normalized", wi, true),
                 .special = bool_member(j, "special", wi, false)};
    if (!t.content.empty()) out.push_back(std::move(t));  // HF ignores empty ones
  }
  return out;
}

// A special token in tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
std::optional<std::string> config_token(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::string_view Tokenizer::Impl::token_string(int32_t id) const {
  if (auto it = added_by_id.find(id); it != added_by_id.end()) return it->second;
  return model.id_to_token(id);
}

bool Tokenizer::Impl::joins_with_next(int32_t id) const {
  if (!decoder.has_byte_fallback()) return false;
  std::string_view t = token_string(id);
  return t.size() == 6 && t.starts_with("<0x") && t.ends_with('>');
}

void Tokenizer::Impl::encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const {
  std::string normalized = normalizer.apply(text);
  std::vector<Segment> parts;
  if (normalized_matcher.empty()) {
    if (!normalized.empty()) parts.push_back({0, normalized.size(), -1});
  } else {
    normalized_matcher.split(normalized, parts);
  }
  std::vector<Piece> pieces;
  for (const Segment& s : parts) {
    if (s.id >= 0) {
      ids.push_back(s.id);
      continue;
    }
    pieces.clear();
    pieces.push_back({normalized.substr(s.begin, s.end - s.begin), at_input_start && s.begin == 0});
    pre_tokenizer.apply(pieces);
    for (const Piece& p : pieces) model.tokenize(p.text, ids);
  }
}

void Tokenizer::Impl::read_pipeline(const Json& root, const Where& w) {
  if (!root.is_object()) w.fail("expected a JSON object");
  const Json& j = member(root, "model", w);
  Where wm = w.at("model");
  if (!j.is_object()) wm.fail("expected an object");
  if (const Json* type = optional_member(j, "type", wm)) {
    if (!type->is_string() || type->get<std::string>() != "BPE") {
      wm.fail("unsupported model type " + type->dump() + " (only BPE is implemented)");
    }
  } else if (!j.contains("merges")) {
    wm.fail("no \"type\" and no \"merges\": not a BPE model");
  }
  model = Bpe::from_json(j, wm);

  auto component = [&](const char* key) -> const Json& {
    static const Json null_json;
    const Json* c = optional_member(root, key, w);
    return c ? *c : null_json;
  };
  normalizer = Normalizer::from_json(component("normalizer"), w.at("normalizer"));
  pre_tokenizer = PreTokenizer::from_json(component("pre_tokenizer"), w.at("pre_tokenizer"));
  post_processor = PostProcessor::from_json(component("post_processor"), w.at("post_processor"));
  decoder = Decoder::from_json(component("decoder"), w.at("decoder"));
}

void Tokenizer::Impl::add_added_tokens(std::vector<AddedToken> added) {
  std::stable_partition(added.begin(), added.end(), [](const AddedToken& t) { return t.special; });
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  std::unordered_set<std::string> special_contents;
  size_t limit = model.id_limit();
  for (const AddedToken& t : added) {
    if (added_by_content.contains(t.content)) continue;
    added_by_content.emplace(t.content, t.id);
    added_by_id[t.id] = t.content;
    if (t.special) special_contents.insert(t.content);
    limit = std::max(limit, size_t(t.id) + 1);
    if (t.normalized) {
      normalized_patterns.push_back(normalizer.apply(t.content));
      normalized.push_back(t);
    } else {
      raw_patterns.push_back(t.content);
      raw.push_back(t);
    }
  }
  raw_matcher = AddedTokenMatcher(std::move(raw), std::move(raw_patterns));
  normalized_matcher = AddedTokenMatcher(std::move(normalized), std::move(normalized_patterns));
  vocab_size = limit;

  // HF's decode skips every token whose string is a special token's content, whatever its id.
  special.assign(vocab_size, 0);
  for (const std::string& c : special_contents) {
    special[size_t(added_by_content.at(c))] = 1;
    if (auto v = model.token_to_id(c); v && !added_by_id.contains(*v)) special[size_t(*v)] = 1;
  }
}

void Tokenizer::Impl::read_config(const Json& config, const std::filesystem::path& path) {
  if (!config.is_object()) throw Error(path.string() + ": expected a JSON object");
  auto resolve = [&](const char* key) -> std::optional<int32_t> {
    auto name = config_token(config, key);
    return name ? token_id(*name) : std::nullopt;
  };
  bos = resolve("bos_token");
  eos = resolve("eos_token");
  pad = resolve("pad_token");
  if (auto it = config.find("add_bos_token"); it != config.end() && it->is_boolean()) add_bos = it->get<bool>();
  if (auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) {
      chat_template = it->get<std::string>();
    } else if (it->is_array()) {
      for (const Json& t : *it) {
        if (t.is_object() && t.contains("name") && t["name"] == "default" && t.contains("template") &&
            t["template"].is_string()) {
          chat_template = t["template"].get<std::string>();
        }
      }
    }
  }
}

std::optional<int32_t> Tokenizer::Impl::token_id(std::string_view token) const {
  if (auto it = added_by_content.find(std::string(token)); it != added_by_content.end()) return it->second;
  return model.token_to_id(token);
}

Tokenizer Tokenizer::load(const std::filesystem::path& model_dir_or_tokenizer_json) {
  auto impl = std::make_unique<Impl>();
  std::filesystem::path path = model_dir_or_tokenizer_json;
  if (std::filesystem::is_directory(path)) path /= "tokenizer.json";
  impl->source = path;
  Json root = parse_json(path);
  Where w{path.string(), ""};
  try {
    impl->read_pipeline(root, w);
    impl->add_added_tokens(read_added_tokens(root, w));
  } catch (const Json::exception& e) {  // a shape the field readers did not check
    throw Error(path.string() + ": " + e.what());
  }
  std::filesystem::path config_path = path.parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    try {
      impl->read_config(parse_json(config_path), config_path);
    } catch (const Json::exception& e) {
      throw Error(config_path.string() + ": " + e.what());
    }
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (size_t bad = find_invalid_utf8(text); bad != std::string_view::npos) {
    throw Error(impl_->source.string() + ": encode: the text is not valid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> segments;
  if (impl_->raw_matcher.empty()) {
    if (!text.empty()) segments.push_back({0, text.size(), -1});
  } else {
    impl_->raw_matcher.split(text, segments);
  }
  for (const Segment& s : segments) {
    if (s.id >= 0) ids.push_back(s.id);
    else impl_->encode_text(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
  }
  if (add_special_tokens) ids = impl_->post_processor.apply(std::move(ids));
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= impl_->vocab_size) continue;
    if (skip_special_tokens && impl_->special[size_t(id)]) continue;
    std::string_view t = impl_->token_string(id);
    if (t.empty()) continue;  // a hole in the ids
    tokens.emplace_back(t);
  }
  return impl_->decoder.decode(std::move(tokens));
}

std::string_view Tokenizer::token(int32_t id) const { return impl_->token_string(id); }

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const { return impl_->token_id(token); }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->vocab_size && impl_->special[size_t(id)];
}

size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }
std::optional<bool> Tokenizer::add_bos_token() const { return impl_->add_bos; }
std::optional<std::string> Tokenizer::chat_template() const { return impl_->chat_template; }
const std::filesystem::path& Tokenizer::source() const { return impl_->source; }
bool Tokenizer::joins_with_next(int32_t id) const { return impl_->joins_with_next(id); }

}  // namespace ls::tok
