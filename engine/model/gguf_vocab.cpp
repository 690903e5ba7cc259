#include "model/gguf_vocab.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "error.h"
#include "util/json_file.h"
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

}  // namespace

void add_gguf_vocab(gguf::Writer& w, const fs::path& model_dir, uint32_t vocab_size) {
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
  if (model.value("byte_fallback", false) || split_regex(tok.value("pre_tokenizer", json())).empty())
    fail("a SentencePiece-style tokenizer (Llama 2, Mistral v0.1) or a pre-tokenizer other than byte-level BPE: "
         "GGUF export writes byte-level BPE tokenizers only for now");
  const std::string regex = split_regex(tok["pre_tokenizer"]);
  const bool ignore_merges = model.value("ignore_merges", false);
  const char* pre = nullptr;
  for (const KnownPre& k : kKnownPres)
    if (regex == k.regex && ignore_merges == k.ignore_merges) pre = k.name;
  if (!pre)
    fail("llama.cpp knows no pre-tokenizer with the split regex \"" + regex + "\" and ignore_merges " +
         (ignore_merges ? "true" : "false") + ": it would tokenize differently, so no GGUF is written");

  // Tokens by id: the vocab, then the added tokens (which may replace vocab entries).
  std::vector<std::string> tokens(vocab_size);
  std::vector<int32_t> types(vocab_size, 0);
  auto put = [&](int64_t id, std::string text, int32_t type) {
    if (id < 0 || id >= int64_t(vocab_size))
      fail("token \"" + text + "\" has id " + std::to_string(id) + ", outside config.json's vocab_size " +
           std::to_string(vocab_size));
    tokens[size_t(id)] = std::move(text);
    types[size_t(id)] = type;
  };
  for (const auto& [text, id] : model["vocab"].items()) put(id.get<int64_t>(), text, 1);
  const json added = tok.value("added_tokens", json::array());
  for (const json& a : added) {
    const std::string text = a.value("content", "");
    const bool looks_special = text.starts_with("<|") && text.ends_with("|>");
    put(a.value("id", int64_t(-1)), text, a.value("special", false) || looks_special ? 3 : 4);
  }
  for (uint32_t i = 0; i < vocab_size; ++i)
    if (types[i] == 0) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = 5;
    }

  std::vector<std::string> merges;
  for (const json& m : model.value("merges", json::array())) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      std::string joined;
      for (int part = 0; part < 2; ++part) {
        if (part) joined += ' ';
        for (char c : m[part].get<std::string>()) joined += c == ' ' ? "\xc4\xa0" : std::string(1, c);  // U+0120
      }
      merges.push_back(std::move(joined));
    } else {
      fail("model.merges holds an entry that is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }

  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string(pre));
  w.set("tokenizer.ggml.tokens", std::move(tokens));
  w.set("tokenizer.ggml.token_type", std::move(types));
  w.set("tokenizer.ggml.merges", std::move(merges));

  // Special tokens: tokenizer_config.json's text looked up among the added tokens, else config.json's id.
  const fs::path model_config = model_dir / "config.json";
  const json cfg = fs::is_regular_file(model_config) ? read_json_file(model_config) : json::object();
  const std::pair<const char*, const char*> kSpecials[] = {
      {"bos", "bos"}, {"eos", "eos"}, {"unk", "unknown"}, {"pad", "padding"}};
  for (const auto& [hf, gguf_name] : kSpecials) {
    std::optional<int32_t> id;
    if (auto text = token_text(tc.value(std::string(hf) + "_token", json())))
      for (const json& a : added)
        if (a.value("content", "") == *text) {
          id = a.value("id", int32_t(-1));
          break;
        }
    const json from_config = cfg.value(std::string(hf) + "_token_id", json());
    if (!id && from_config.is_number_integer()) id = from_config.get<int32_t>();
    if (id && *id >= 0) w.set("tokenizer.ggml." + std::string(gguf_name) + "_token_id", uint32_t(*id));
  }
  // add_bos/add_eos: a TemplateProcessing post-processor's first/last special token, then tokenizer_config.
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

}  // namespace ls::model
