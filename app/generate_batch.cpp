#include "generate_batch.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "error.h"
#include "generate_session.h"
#include "infer/batch_generator.h"
#include "infer/text_stream.h"
#include "train/jsonl.h"

namespace ls::app {

namespace fs = std::filesystem;

namespace {

// One line of the prompts file, as a prompt: what is generated from, and the answer the file gives, if any.
//   {"messages": [...]}: the conversation before its last assistant message (all of it when it ends with
//     another role), rendered by the chat template with the generation prompt; that message is the reference.
//   {"prompt": ..., "completion": ...}: the prompt as it is (as training reads it); the completion the reference.
//   {"text": ...}: the text, continued as it is.
struct EvalPrompt {
  size_t line = 0;
  std::vector<int32_t> ids;
  std::string reference;
  bool chat = false;  // the chat template's stop strings apply
};

EvalPrompt to_prompt(const train::Record& r, const infer::ChatModelFiles& files, const std::string& where) {
  EvalPrompt p{.line = r.line};
  switch (r.kind) {
    case train::RecordKind::text:
      p.ids = files.tokenizer.encode(r.text, true);
      break;
    case train::RecordKind::prompt_completion:
      p.ids = files.tokenizer.encode(r.prompt, true);
      p.reference = r.completion;
      break;
    case train::RecordKind::messages: {
      std::vector<tok::ChatMessage> conversation = r.messages;
      if (conversation.back().role == "assistant") {
        p.reference = conversation.back().content;
        conversation.pop_back();
      }
      if (conversation.empty()) throw Error(where + ": the conversation has only the assistant's answer, nothing to reply to");
      p.ids = files.tokenizer.encode(files.chat.render_text(conversation, true), false);
      p.chat = true;
      break;
    }
  }
  if (p.ids.empty()) throw Error(where + ": the prompt is empty");
  return p;
}

// The replies of one model (base or adapter) to every prompt, as text.
std::vector<infer::BatchReply> replies_of(GenerateSession& s, const model::LoraAdapter* adapter,
                                          const GenerateArgs& a, const std::vector<EvalPrompt>& prompts,
                                          std::vector<std::string>& texts, const std::string& label) {
  const auto options = generation_options(a, s);
  const uint32_t batch = uint32_t(std::min<size_t>(a.batch_size, prompts.size()));  // no slot that stays free
  infer::BatchGenerator g(s.device, s.model, adapter, {.context = a.context, .act = s.act(a)}, batch);
  std::vector<std::vector<int32_t>> ids;
  for (const auto& p : prompts) ids.push_back(p.ids);
  std::vector<infer::TextStream> streams;
  streams.reserve(prompts.size());
  for (const auto& p : prompts) {
    std::vector<std::string> stops = a.stop;
    if (p.chat)
      for (auto& st : s.files.chat.stop_strings()) stops.push_back(st);
    streams.emplace_back(s.files.tokenizer, std::move(stops));
  }
  std::vector<infer::BatchReply> replies(prompts.size());
  texts.assign(prompts.size(), "");
  size_t done = 0;
  const bool tty = isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = g.generate(
      ids, options,
      [&](size_t i, int32_t id) {
        streams[i].push(id);
        return !streams[i].stopped();
      },
      [&](size_t i, infer::BatchReply&& r) {
        streams[i].finish();
        texts[i] = streams[i].text();
        if (r.stop_reason == "stopped") r.stop_reason = "stop string";
        replies[i] = std::move(r);
        ++done;
        if (tty)
          std::fprintf(stderr, "\r[%s%zu/%zu replies]", label.c_str(), done, prompts.size());
      });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "%s[%s%u prompts, %u prompt tokens, %u new tokens in %.2f s: %.1f new tok/s, decode %.1f tok/s "
               "(%u steps of %u sequences)]\n",
               tty ? "\r" : "", label.c_str(), stats.prompts, stats.prompt_tokens, stats.new_tokens, wall,
               wall > 0 ? stats.new_tokens / wall : 0.0, stats.decode_tokens_per_second(), stats.steps, g.batch());
  return replies;
}

}  // namespace

int run_generate_batch(const GenerateArgs& a) {
  if (a.batch_size == 0) throw Error("--batch-size must be at least 1");
  if (a.compare_base && a.adapter.empty()) throw Error("--compare-base needs --adapter (the base is compared with it)");
  const auto start = std::chrono::steady_clock::now();
  GenerateSession s(a);
  std::vector<train::LineError> bad;
  const auto records = train::read_jsonl(a.prompts, false, &bad);
  if (records.empty()) throw Error(a.prompts + ": no prompts (the file has no lines)");
  std::vector<EvalPrompt> prompts;
  for (const auto& r : records) prompts.push_back(to_prompt(r, s.files, a.prompts + ":" + std::to_string(r.line)));
  std::fprintf(stderr, "[model loaded in %.2f s; %zu prompts]\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), prompts.size());

  std::vector<std::string> texts, base_texts;
  const auto replies = replies_of(s, s.adapter ? &*s.adapter : nullptr, a, prompts, texts, s.adapter ? "adapter: " : "");
  std::vector<infer::BatchReply> base_replies;
  if (a.compare_base) base_replies = replies_of(s, nullptr, a, prompts, base_texts, "base: ");

  const fs::path out = a.out, partial = a.out.empty() ? fs::path() : fs::path(a.out + ".partial");
  std::ofstream file;
  if (!a.out.empty()) {
    file.open(partial, std::ios::binary | std::ios::trunc);
    if (!file) throw Error(partial.string() + ": cannot be written");
  }
  std::ostream& os = a.out.empty() ? std::cout : file;
  for (size_t i = 0; i < prompts.size(); ++i) {
    nlohmann::ordered_json j;
    j["line"] = prompts[i].line;
    if (!prompts[i].reference.empty()) j["reference"] = prompts[i].reference;
    j["reply"] = texts[i];
    j["prompt_tokens"] = replies[i].prompt_tokens;
    j["new_tokens"] = replies[i].ids.size();
    j["stop"] = replies[i].stop_reason;
    if (a.compare_base) {
      j["base_reply"] = base_texts[i];
      j["base_new_tokens"] = base_replies[i].ids.size();
      j["base_stop"] = base_replies[i].stop_reason;
    }
    os << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  os.flush();
  if (!os) throw Error((a.out.empty() ? std::string("stdout") : partial.string()) + ": writing the replies failed");
  if (!a.out.empty()) {
    file.close();
    std::error_code ec;
    fs::rename(partial, out, ec);
    if (ec) throw Error(partial.string() + ": cannot be renamed to " + out.string() + ": " + ec.message());
    std::fprintf(stderr, "[%zu replies written to %s]\n", prompts.size(), out.string().c_str());
  }
  return 0;
}

}  // namespace ls::app
