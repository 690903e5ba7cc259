#include "generate_batch.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "error.h"
#include "generate_session.h"
#include "infer/eval_set.h"
#include "train/jsonl.h"

namespace ls::app {

namespace fs = std::filesystem;

namespace {

// The replies of one model (base or adapter) to every prompt, with progress on a terminal and the throughput.
std::vector<infer::EvalReply> replies_of(GenerateSession& s, const model::LoraAdapter* adapter, const GenerateArgs& a,
                                         const std::vector<infer::EvalPrompt>& prompts, const std::string& label) {
  size_t done = 0;
  const bool tty = isatty(STDERR_FILENO);
  infer::EvalSideStats stats;
  auto replies = infer::generate_replies(
      s.device, s.model, adapter, s.files, {.context = a.context, .act = s.act(a)}, generation_options(a, s), a.stop,
      prompts, a.batch_size,
      [&](size_t, const infer::EvalReply&) {
        ++done;
        if (tty) std::fprintf(stderr, "\r[%s%zu/%zu replies]", label.c_str(), done, prompts.size());
      },
      {}, &stats);
  const auto& b = stats.batch;
  std::fprintf(stderr, "%s[%s%u prompts, %u prompt tokens, %u new tokens in %.2f s: %.1f new tok/s, decode %.1f tok/s "
               "(%u steps of %u sequences)]\n",
               tty ? "\r" : "", label.c_str(), b.prompts, b.prompt_tokens, b.new_tokens, stats.wall_seconds,
               stats.wall_seconds > 0 ? b.new_tokens / stats.wall_seconds : 0.0, b.decode_tokens_per_second(), b.steps,
               uint32_t(std::min<size_t>(a.batch_size, prompts.size())));
  return replies;
}

}  // namespace

int run_generate_batch(const GenerateArgs& a) {
  if (a.batch_size == 0) throw Error("--batch-size must be at least 1");
  if (a.compare_base && a.adapter.empty()) throw Error("--compare-base needs --adapter (the base is compared with it)");
  const auto start = std::chrono::steady_clock::now();
  GenerateSession s(a);
  const auto records = train::read_jsonl(a.prompts, false, nullptr);
  if (records.empty()) throw Error(a.prompts + ": no prompts (the file has no lines)");
  std::vector<infer::EvalPrompt> prompts;
  for (const auto& r : records) prompts.push_back(infer::eval_prompt(r, s.files, a.prompts + ":" + std::to_string(r.line)));
  std::fprintf(stderr, "[model loaded in %.2f s; %zu prompts]\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), prompts.size());

  const auto replies = replies_of(s, s.adapter ? &*s.adapter : nullptr, a, prompts, s.adapter ? "adapter: " : "");
  std::vector<infer::EvalReply> base;
  if (a.compare_base) base = replies_of(s, nullptr, a, prompts, "base: ");
  std::vector<infer::EvalRow> rows(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    rows[i] = {.line = prompts[i].line, .prompt = prompts[i].shown, .reference = prompts[i].reference,
               .prompt_tokens = uint32_t(prompts[i].ids.size()), .reply = replies[i]};
    if (a.compare_base) rows[i].base = base[i];
  }
  if (a.out.empty()) {
    for (const auto& row : rows) std::cout << infer::eval_row_json(row, a.compare_base) << "\n";
    std::cout.flush();
    if (!std::cout) throw Error("stdout: writing the replies failed");
    return 0;
  }
  infer::write_eval_jsonl(rows, a.compare_base, a.out);
  std::fprintf(stderr, "[%zu replies written to %s]\n", rows.size(), a.out.c_str());
  return 0;
}

}  // namespace ls::app
