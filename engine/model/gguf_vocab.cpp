#include "model/gguf_vocab.h"

#include <cctype>
#include <limits>
#include <map>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <optional>

#include "error.h"
#include "util/json_file.h"
#include "util/json_keys.h"
#include "util/mapped_file.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// llama.cpp's pre-tokenizer types (llama-vocab.cpp) by the regex of tokenizer.json's Split and the BPE
// model's ignore_merges: the two pre-tokenizers of our architectures' tokenizers, and GPT-2's.
struct KnownPre {
  const char* regex;
  bool ignore_merges;
  const char* name;
};
constexpr const char* kGpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const KnownPre kKnownPres[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     false, "qwen2"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, "llama-bpe"},
    {kGpt2Regex, false, "gpt-2"},
};

// The regex the pre-tokenizer splits with: a Split(Regex) before a ByteLevel without its own regex, or a
// ByteLevel with use_regex (GPT-2's). Empty when the pipeline is something else.
std::string split_regex(const json& pre) {
  if (!pre.is_object()) return "";
  const std::string type = pre.value("type", "");
  if (type == "ByteLevel") return pre.value("use_regex", true) ? kGpt2Regex : "";
  if (type != "Sequence" || !pre.contains("pretokenizers") || pre["pretokenizers"].size() != 2) return "";
  const json& split = pre["pretokenizers"][0];
  const json& byte_level = pre["pretokenizers"][1];
  if (split.value("type", "") != "Split" || byte_level.value("type", "") != "ByteLevel" ||
      byte_level.value("use_regex", true) || !split.contains("pattern") || !split["pattern"].contains("Regex"))
    return "";
  return split["pattern"]["Regex"].get<std::string>();
}

std::optional<std::string> token_text(const json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") && entry["content"].is_string())
    return entry["content"].get<std::string>();
  return std::nullopt;
}

bool is_replace_space(const json& n) {
  return n.is_object() && n.value("type", "") == "Replace" && n.value("content", "") == "\xe2\x96\x81" &&
         n.contains("pattern") && n["pattern"].is_object() && n["pattern"].value("String", "") == " ";
}

// A SentencePiece BPE model as transformers converts it to tokenizer.json: byte fallback, and a normalizer
// that writes every space as "▁".
//   with_prefix: Llama 2 and Mistral v0.1 (transformers' "legacy" form): no pre-tokenizer, and a Prepend("▁")
//     before the Replace, as llama.cpp's SPM tokenizer does to each piece of text between special tokens
//     (tokenizer.ggml.add_space_prefix, true by default).
//   no_prefix: Gemma: the Replace alone, and no pre-tokenizer or a Split on " " (which finds no space left
//     after the normalizer); llama.cpp's SPM with add_space_prefix false, as convert_hf_to_gguf.py writes it.
enum class SpmForm { none, with_prefix, no_prefix };
SpmForm sentencepiece_form(const json& tok) {
  const json& model = tok["model"];
  const json norm = tok.value("normalizer", json());
  const json pre = tok.value("pre_tokenizer", json());
  if (!model.value("byte_fallback", false) || !norm.is_object()) return SpmForm::none;
  const bool split_on_space = pre.is_object() && pre.value("type", "") == "Split" && pre.contains("pattern") &&
                              pre["pattern"].is_object() && pre["pattern"].value("String", "") == " ";
  if ((pre.is_null() || split_on_space) && is_replace_space(norm)) return SpmForm::no_prefix;
  if (!pre.is_null() || norm.value("type", "") != "Sequence" || !norm.contains("normalizers")) return SpmForm::none;
  const json& parts = norm["normalizers"];
  if (parts.size() == 1 && is_replace_space(parts[0])) return SpmForm::no_prefix;
  if (parts.size() != 2) return SpmForm::none;
  const json& prepend = parts[0];
  return prepend.value("type", "") == "Prepend" && prepend.value("prepend", "") == "\xe2\x96\x81" &&
                 is_replace_space(parts[1])
             ? SpmForm::with_prefix
             : SpmForm::none;
}

bool is_byte_token(const std::string& t) {
  return t.size() == 6 && t.starts_with("<0x") && t.back() == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

}  // namespace

namespace {

void write_vocab(gguf::Writer& w, const fs::path& model_dir, uint32_t vocab_size) {
  const fs::path tok_path = model_dir / "tokenizer.json";
  if (!fs::is_regular_file(tok_path))
    throw Error(tok_path.string() + ": missing (GGUF export needs the model's tokenizer.json)");
  const json tok = read_json_file(tok_path);
  const fs::path config_path = model_dir / "tokenizer_config.json";
  const json tc = fs::is_regular_file(config_path) ? read_json_file(config_path) : json::object();
  auto fail = [&](const std::string& what) { throw Error(tok_path.string() + ": " + what); };

  const json& model = tok.contains("model") ? tok["model"] : json();
  if (!model.is_object() || model.value("type", "") != "BPE" || !model.contains("vocab") || !model["vocab"].is_object())
    fail("GGUF export supports BPE tokenizers only (model.type \"BPE\" with a vocab)");
  const SpmForm spm_form = sentencepiece_form(tok);
  const bool spm = spm_form != SpmForm::none;
  const char* pre = nullptr;
  if (!spm) {
    const std::string regex = split_regex(tok.value("pre_tokenizer", json()));
    if (model.value("byte_fallback", false) || regex.empty())
      fail("GGUF export writes byte-level BPE tokenizers (Qwen, Llama 3) and SentencePiece BPE ones as transformers "
           "converts them (byte_fallback and a Replace(\" \", \"\xe2\x96\x81\") normalizer: Llama 2 and Mistral "
           "v0.1 with a Prepend(\"\xe2\x96\x81\") before it and no pre_tokenizer, Gemma without); this tokenizer is "
           "neither, and llama.cpp would tokenize it differently");
    const bool ignore_merges = model.value("ignore_merges", false);
    for (const KnownPre& k : kKnownPres)
      if (regex == k.regex && ignore_merges == k.ignore_merges) pre = k.name;
    if (!pre)
      fail("llama.cpp knows no pre-tokenizer with the split regex \"" + regex + "\" and ignore_merges " +
           (ignore_merges ? "true" : "false") + ": it would tokenize differently, so no GGUF is written");
  }

  // Tokens by id: the vocab, then the added tokens (which may replace vocab entries). Types as llama.cpp's
  // llama_token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
  const std::string unk = model.value("unk_token", json()).is_string() ? model["unk_token"].get<std::string>() : "";
  std::vector<std::string> tokens(vocab_size);
  std::vector<int32_t> types(vocab_size, 0);
  auto put = [&](int64_t id, std::string text, int32_t type) {
    if (id < 0 || id >= int64_t(vocab_size))
      fail("token \"" + text + "\" has id " + std::to_string(id) + ", outside config.json's vocab_size " +
           std::to_string(vocab_size));
    if (spm && text == unk) type = 2;
    tokens[size_t(id)] = std::move(text);
    types[size_t(id)] = type;
  };
  // Ids are checked for kind before any conversion (util/json_keys.h): a float such as 1e48 would not convert.
  auto whole_id = [&](const std::string& text, const json& id) {
    const auto n = json_integer(id, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!n) fail("token \"" + text + "\" has the id " + id.dump() + ", not a whole number");
    return *n;
  };
  for (const auto& [text, id] : model["vocab"].items()) put(whole_id(text, id), text, spm && is_byte_token(text) ? 6 : 1);
  const json added = tok.value("added_tokens", json::array());
  if (!added.is_array()) fail("\"added_tokens\" must be a list, got " + added.dump());
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id"))
      fail("\"added_tokens\" holds " + a.dump() + ", not a token with a \"content\" text and an \"id\"");
    const std::string text = a["content"].get<std::string>();
    const bool looks_special = text.starts_with("<|") && text.ends_with("|>");
    const bool special = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
    put(whole_id(text, a["id"]), text, special || looks_special ? 3 : 4);
  }
  for (uint32_t i = 0; i < vocab_size; ++i)
    if (types[i] == 0) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = 5;
    }

  std::vector<std::pair<std::string, std::string>> merges;
  for (const json& m : model.value("merges", json::array())) {
    const std::string joined = m.is_string() ? m.get<std::string>() : "";
    const size_t space = joined.find(' ');
    if (m.is_string() && space != std::string::npos && joined.find(' ', space + 1) == std::string::npos)
      merges.emplace_back(joined.substr(0, space), joined.substr(space + 1));
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    else
      fail("model.merges holds an entry that is neither \"a b\" nor [\"a\", \"b\"]");
  }

  w.set("tokenizer.ggml.model", std::string(spm ? "llama" : "gpt2"));
  w.set("tokenizer.ggml.pre", std::string(spm ? "default" : pre));
  if (spm_form == SpmForm::no_prefix) w.set("tokenizer.ggml.add_space_prefix", false);
  if (spm) {
    // llama.cpp's SPM merges the neighbours whose joined text is the token of highest score; transformers'
    // BPE the pair of lowest merge rank. A token's score is minus the first rank that makes it, so both
    // merge in the same order (the converter lists the merges of each SentencePiece piece together, in the
    // order of the pieces' scores). Added tokens that are also pieces a merge makes (Gemma's "▁▁", ...) score
    // the same way: llama.cpp's SPM merges them by score too. Tokens no merge makes (bytes, single characters,
    // specials) score 0, as SentencePiece gives them; the padding -10000, as convert_hf_to_gguf.py does.
    std::unordered_map<std::string, size_t> rank;
    for (size_t r = 0; r < merges.size(); ++r) rank.try_emplace(merges[r].first + merges[r].second, r);
    std::vector<float> scores(vocab_size, 0.f);
    for (uint32_t i = 0; i < vocab_size; ++i) {
      const auto it = rank.find(tokens[i]);
      if (types[i] == 5) scores[i] = -10000.f;
      else if ((types[i] == 1 || types[i] == 4) && it != rank.end()) scores[i] = -float(it->second);
    }
    w.set("tokenizer.ggml.tokens", std::move(tokens));
    w.set("tokenizer.ggml.scores", std::move(scores));
    w.set("tokenizer.ggml.token_type", std::move(types));
  } else {
    std::vector<std::string> merge_lines;  // "a b", a space inside a part written as U+0120
    for (const auto& [a, b] : merges) {
      std::string line;
      for (char c : a) line += c == ' ' ? "\xc4\xa0" : std::string(1, c);
      line += ' ';
      for (char c : b) line += c == ' ' ? "\xc4\xa0" : std::string(1, c);
      merge_lines.push_back(std::move(line));
    }
    w.set("tokenizer.ggml.tokens", std::move(tokens));
    w.set("tokenizer.ggml.token_type", std::move(types));
    w.set("tokenizer.ggml.merges", std::move(merge_lines));
  }

  // Special tokens: tokenizer_config.json's text looked up among the added tokens, else config.json's id.
  const fs::path model_config = model_dir / "config.json";
  const json cfg = fs::is_regular_file(model_config) ? read_json_file(model_config) : json::object();
  const std::pair<const char*, const char*> kSpecials[] = {
      {"bos", "bos"}, {"eos", "eos"}, {"unk", "unknown"}, {"pad", "padding"}};
  for (const auto& [hf, gguf_name] : kSpecials) {
    std::optional<int32_t> id;
    if (auto text = token_text(tc.value(std::string(hf) + "_token", json())))
      for (const json& a : added)  // (each checked above: a text and a whole-number id within the vocabulary)
        if (a["content"] == *text) {
          id = int32_t(a["id"].get<int64_t>());
          break;
        }
    const json from_config = cfg.value(std::string(hf) + "_token_id", json());
    if (!id)
      if (auto n = json_integer(from_config, 0, int64_t(vocab_size) - 1)) id = int32_t(*n);
    if (id && *id >= 0) w.set("tokenizer.ggml." + std::string(gguf_name) + "_token_id", uint32_t(*id));
  }
  // add_bos/add_eos: a TemplateProcessing post-processor's first/last special token, then tokenizer_config;
  // false where neither says, as transformers and our tokenizer then add nothing (llama.cpp would otherwise
  // add BOS for "llama-bpe" and "llama", unlike the tokenization the model was tuned on).
  w.set("tokenizer.ggml.add_bos_token", false);
  w.set("tokenizer.ggml.add_eos_token", false);
  const json post = tok.value("post_processor", json());
  if (post.is_object()) {
    const json processors = post.value("type", "") == "Sequence" ? post.value("processors", json::array())
                                                                  : json::array({post});
    for (const json& p : processors) {
      if (p.value("type", "") != "TemplateProcessing" || !p.contains("single") || p["single"].size() < 2) continue;
      const json& single = p["single"];
      w.set("tokenizer.ggml.add_bos_token", single.front().contains("SpecialToken"));
      w.set("tokenizer.ggml.add_eos_token", single.back().contains("SpecialToken"));
    }
  }
  for (const char* hf : {"bos", "eos"})
    if (tc.contains(std::string("add_") + hf + "_token") && tc["add_" + std::string(hf) + "_token"].is_boolean())
      w.set("tokenizer.ggml.add_" + std::string(hf) + "_token", tc["add_" + std::string(hf) + "_token"].get<bool>());

  std::optional<std::string> chat_template;
  const json ct = tc.value("chat_template", json());
  if (ct.is_string()) chat_template = ct.get<std::string>();
  else if (ct.is_array())
    for (const json& named : ct)
      if (named.value("name", "") == "default") chat_template = named.value("template", "");
  if (!chat_template && fs::is_regular_file(model_dir / "chat_template.jinja")) {
    MappedFile f(model_dir / "chat_template.jinja");
    chat_template = std::string(reinterpret_cast<const char*>(f.bytes().data()), f.size());
  }
  if (chat_template) w.set("tokenizer.chat_template", *chat_template);
}

}  // namespace

void add_gguf_vocab(gguf::Writer& w, const fs::path& model_dir, uint32_t vocab_size) {
  try {
    write_vocab(w, model_dir, vocab_size);
  } catch (const nlohmann::json::exception& e) {  // a value of another kind than the format's where it is read
    throw Error((model_dir / "tokenizer.json").string() + " (or tokenizer_config.json beside it): a value of the wrong kind: " +
                e.what());
  }
}

}  // namespace ls::model
