#include "infer/chat_session.h"

#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "error.h"
#include "infer/text_stream.h"
#include "util/json_file.h"
#include "util/json_keys.h"

namespace ls::infer {

namespace fs = std::filesystem;

namespace {

tok::Tokenizer load_tokenizer(const fs::path& dir) {
  if (!fs::exists(dir / "tokenizer.json"))
    throw Error(dir.string() + ": no tokenizer.json in the model folder (lorastudio needs the model's own tokenizer)");
  return tok::Tokenizer::load(dir);
}

tok::ChatTemplate load_template(const fs::path& dir, std::vector<std::string>& warnings) {
  const auto path = dir / "tokenizer_config.json";
  return fs::exists(path) ? tok::ChatTemplate::from_tokenizer_config(path, &warnings)
                          : tok::ChatTemplate::recognise("", path.string(), &warnings);
}

std::vector<int32_t> eos_ids(const fs::path& dir, const model::ModelConfig& config, const tok::Tokenizer& tokenizer) {
  std::set<int32_t> ids(config.eos_token_ids.begin(), config.eos_token_ids.end());
  if (auto e = tokenizer.eos_id()) ids.insert(*e);
  const auto gen = dir / "generation_config.json";
  if (fs::exists(gen)) {
    const nlohmann::json j = read_json_file(gen);
    if (!j.is_object()) throw Error(gen.string() + ": not a JSON object");
    for (int32_t id : JsonKeys(j, gen.string()).token_ids("eos_token_id")) ids.insert(id);
  }
  return {ids.begin(), ids.end()};
}

}  // namespace

ChatModelFiles ChatModelFiles::load(const fs::path& dir, const model::ModelConfig& config) {
  std::vector<std::string> warnings;
  auto tokenizer = load_tokenizer(dir);
  auto chat = load_template(dir, warnings);
  auto eos = eos_ids(dir, config, tokenizer);
  return {std::move(tokenizer), std::move(chat), std::move(eos), std::move(warnings)};
}

Reply stream_reply(Generator& g, const tok::Tokenizer& tokenizer, std::span<const int32_t> prompt,
                   const GenerateOptions& options, std::vector<std::string> stop_strings, const OnText& on_text) {
  TextStream text(tokenizer, std::move(stop_strings));
  bool go_on = true;
  Reply r;
  r.stats = g.generate(prompt, options, [&](int32_t id) {
    go_on = on_text(text.push(id)) && go_on;
    return go_on && !text.stopped();
  });
  on_text(text.finish());
  if (text.stopped()) r.stats.stop_reason = "stop string";
  r.text = text.text();
  return r;
}

Reply chat_turn(Generator& g, const ChatModelFiles& files, std::vector<tok::ChatMessage>& messages,
                const GenerateOptions& options, const OnText& on_text) {
  auto ids = files.tokenizer.encode(files.chat.render_text(messages, true), false);
  // Reuse the KV cache for the longest common prefix of the re-rendered conversation.
  auto ctx = g.context();
  size_t common = 0;
  while (common < ctx.size() && common < ids.size() && ctx[common] == ids[common]) ++common;
  if (common == ids.size()) --common;  // at least one token to prefill, for fresh logits
  bool dropped = false;
  if (ids.size() + options.max_new_tokens > g.capacity() && messages.size() > 1) {
    // No room: start over with a leading system message and this turn only.
    const bool system = messages.front().role == "system";
    messages.erase(messages.begin() + (system ? 1 : 0), messages.end() - 1);
    ids = files.tokenizer.encode(files.chat.render_text(messages, true), false);
    common = 0;
    dropped = true;
  }
  if (ids.size() >= g.capacity())
    throw Error("chat: the message takes " + std::to_string(ids.size()) + " tokens; the context holds " +
                std::to_string(g.capacity()));
  g.truncate(uint32_t(common));
  auto reply = stream_reply(g, files.tokenizer, std::span(ids).subspan(common), options, files.chat.stop_strings(), on_text);
  reply.history_dropped = dropped;
  return reply;
}

}  // namespace ls::infer
