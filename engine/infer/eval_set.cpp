#include "infer/eval_set.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "error.h"
#include "infer/text_stream.h"

namespace ls::infer {

namespace fs = std::filesystem;

EvalPrompt eval_prompt(const train::Record& r, const ChatModelFiles& files, const std::string& where) {
  EvalPrompt p{.line = r.line};
  switch (r.kind) {
    case train::RecordKind::text:
      p.ids = files.tokenizer.encode(r.text, true);
      p.shown = r.text;
      break;
    case train::RecordKind::prompt_completion:
      p.ids = files.tokenizer.encode(r.prompt, true);
      p.shown = r.prompt;
      p.reference = r.completion;
      break;
    case train::RecordKind::messages: {
      std::vector<tok::ChatMessage> conversation = r.messages;
      if (!conversation.empty() && conversation.back().role == "assistant") {
        p.reference = conversation.back().content;
        conversation.pop_back();
      }
      if (conversation.empty())
        throw Error(where + ": the conversation has only the assistant's answer, nothing to reply to");
      p.shown = conversation.back().content;
      p.ids = files.tokenizer.encode(files.chat.render_text(conversation, true), false);
      p.chat = true;
      break;
    }
  }
  if (p.ids.empty()) throw Error(where + ": the prompt is empty");
  return p;
}

std::vector<train::Record> held_out_records(const fs::path& train_file, const tok::Tokenizer& tokenizer,
                                            const tok::ChatTemplate& chat_template, train::DatasetOptions o) {
  if (o.validation_file.empty() && !(o.validation_fraction > 0.0))
    throw Error(train_file.string() + ": no examples are held out (no validation file and a validation fraction of 0)");
  o.pack = false;  // one example a row, so that each row's line is its own
  o.epochs = 1;
  const auto d = train::load_dataset(train_file, tokenizer, chat_template, o);
  std::set<size_t> lines;
  for (const auto& e : d.validation) lines.insert(e.line);
  const fs::path file = o.validation_file.empty() ? train_file : o.validation_file;
  std::vector<train::LineError> bad;
  std::vector<train::Record> held;
  for (auto& r : train::read_jsonl(file, true, &bad))
    if (lines.count(r.line)) held.push_back(std::move(r));
  if (held.empty()) throw Error(file.string() + ": no validation examples");
  return held;
}

std::vector<EvalReply> generate_replies(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter,
                                        const ChatModelFiles& files, const GeneratorOptions& generator,
                                        const GenerateOptions& options, const std::vector<std::string>& stop_strings,
                                        const std::vector<EvalPrompt>& prompts, uint32_t batch,
                                        const std::function<void(size_t, const EvalReply&)>& on_reply,
                                        const std::function<bool()>& cancelled, EvalSideStats* stats) {
  if (batch == 0) throw Error("evaluation: the batch size must be at least 1");
  std::vector<EvalReply> replies(prompts.size());
  if (prompts.empty()) return replies;
  const auto t0 = std::chrono::steady_clock::now();
  BatchGenerator g(device, model, adapter, generator, uint32_t(std::min<size_t>(batch, prompts.size())));
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(prompts.size());
  for (const auto& p : prompts) ids.push_back(p.ids);
  std::vector<TextStream> streams;
  streams.reserve(prompts.size());
  for (const auto& p : prompts) {
    std::vector<std::string> stops = stop_strings;
    if (p.chat)
      for (auto& s : files.chat.stop_strings()) stops.push_back(s);
    streams.emplace_back(files.tokenizer, std::move(stops));
  }
  const auto batch_stats = g.generate(
      ids, options,
      [&](size_t i, int32_t id) {
        if (cancelled && cancelled()) throw EvalCancelled{};
        streams[i].push(id);
        return !streams[i].stopped();
      },
      [&](size_t i, BatchReply&& r) {
        streams[i].finish();
        replies[i] = {.text = streams[i].text(),
                      .new_tokens = uint32_t(r.ids.size()),
                      .stop = r.stop_reason == "stopped" ? "stop string" : r.stop_reason};
        if (on_reply) on_reply(i, replies[i]);
      });
  if (stats) {
    stats->batch = batch_stats;
    stats->wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return replies;
}

std::string eval_row_json(const EvalRow& row, bool compared) {
  nlohmann::ordered_json j;
  j["line"] = row.line;
  if (!row.reference.empty()) j["reference"] = row.reference;
  j["reply"] = row.reply.text;
  j["prompt_tokens"] = row.prompt_tokens;
  j["new_tokens"] = row.reply.new_tokens;
  j["stop"] = row.reply.stop;
  if (compared) {
    j["base_reply"] = row.base.text;
    j["base_new_tokens"] = row.base.new_tokens;
    j["base_stop"] = row.base.stop;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_eval_jsonl(const std::vector<EvalRow>& rows, bool compared, const fs::path& path) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    if (!file) throw Error(partial.string() + ": cannot be written");
    for (const auto& row : rows) file << eval_row_json(row, compared) << "\n";
    file.flush();
    if (!file) {
      file.close();
      std::error_code ignored;
      fs::remove(partial, ignored);
      throw Error(partial.string() + ": writing the replies failed (is the disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) throw Error(partial.string() + ": cannot be renamed to " + path.string() + ": " + ec.message());
}

}  // namespace ls::infer
