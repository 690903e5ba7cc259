#include "generate_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <fstream>

#include "error.h"
#include "generate_batch.h"
#include "generate_session.h"
#include "infer/chat_session.h"
#include "infer/generator.h"

namespace ls::app {

namespace fs = std::filesystem;

void add_generation_options(CLI::App& cmd, GenerateArgs& a) {
  cmd.add_option("--model", a.model, "Hugging Face model folder (config.json, *.safetensors, tokenizer.json)")->required();
  cmd.add_option("--adapter", a.adapter, "PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors)");
  cmd.add_option("--system", a.system, "system message (default: the template's own, if any)");
  cmd.add_option("--max-tokens", a.max_tokens, "most tokens to generate")->capture_default_str();
  cmd.add_option("--temperature", a.temperature, "sampling temperature; 0 is greedy")->capture_default_str();
  cmd.add_option("--top-k", a.top_k, "keep the k most likely tokens (0: off)")->capture_default_str();
  cmd.add_option("--top-p", a.top_p, "nucleus sampling mass (1: off)")->capture_default_str();
  cmd.add_option("--min-p", a.min_p, "drop tokens below min-p x the top probability (0: off)")->capture_default_str();
  cmd.add_option("--repetition-penalty", a.repetition_penalty, "HF repetition penalty (1: off)")->capture_default_str();
  cmd.add_option("--seed", a.seed, "random seed for sampling")->capture_default_str();
  cmd.add_option("--stop", a.stop, "stop when this text appears (repeatable)");
  cmd.add_flag("--ignore-eos", a.ignore_eos, "keep generating past end-of-sequence tokens");
  cmd.add_option("--context", a.context, "context length in tokens (KV-cache size)")->capture_default_str();
  cmd.add_option("--act", a.act, "activation precision: f32, f16 or auto (f16 where the GPU has it)")
      ->check(CLI::IsMember({"f32", "f16", "auto"}))
      ->capture_default_str();
  cmd.add_option("--quantize", a.quantize,
                 "keep the model's projection weights in 4 bits (nf4, as QLoRA trains on) or 8 bits (q8): less GPU "
                 "memory, faster decoding")
      ->capture_default_str();
  cmd.add_option("--device", a.device, "Vulkan device: number from --devices or part of its name");
  cmd.add_option("--dump-logits", a.dump_logits, "write the prompt's last-position logits (raw f32) to this file")
      ->group("");  // for checks against other engines
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The turn's figures; first_token: seconds from the request to its first piece of text (< 0: none came).
void print_stats(const infer::GenerateStats& st, double first_token) {
  char first[64] = "";
  if (first_token >= 0) std::snprintf(first, sizeof first, "first token after %.2f s | ", first_token);
  std::fprintf(stderr, "\n[%sprefill %u tokens: %.1f tok/s | decode %u tokens: %.1f tok/s | stop: %s]\n", first,
               st.prompt_tokens, st.prefill_tokens_per_second(), st.new_tokens, st.decode_tokens_per_second(),
               st.stop_reason.c_str());
}

// Writes each piece of the reply to stdout as it comes.
bool print_piece(std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace

int run_generate(const GenerateArgs& a) {
  if (!a.prompts.empty()) {
    if (!a.prompt.empty()) throw Error("generate: give --prompt or --prompts, not both");
    if (a.raw || !a.dump_logits.empty()) throw Error("generate --prompts: --raw and --dump-logits apply to --prompt only");
    return run_generate_batch(a);
  }
  if (a.prompt.empty()) throw Error("generate needs --prompt TEXT (one reply, streamed) or --prompts FILE.jsonl (a reply to each)");
  if (!a.out.empty() || a.compare_base) throw Error("generate: --out and --compare-base go with --prompts FILE.jsonl");
  const auto start = std::chrono::steady_clock::now();
  GenerateSession s(a);
  const auto options = generation_options(a, s);
  infer::Generator g(s.device, s.model, s.adapter ? &*s.adapter : nullptr, {.context = a.context, .act = s.act(a)});
  std::fprintf(stderr, "[model loaded in %.2f s]\n", seconds_since(start));
  const auto asked = std::chrono::steady_clock::now();
  double first_token = -1;
  std::string text = a.prompt;
  std::vector<std::string> stops = a.stop;
  if (!a.raw) {
    std::vector<tok::ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    text = s.files.chat.render_text(messages, true);
    for (auto& st : s.files.chat.stop_strings()) stops.push_back(st);
  }
  auto ids = s.files.tokenizer.encode(text, false);
  if (ids.empty()) throw Error("generate: the prompt is empty");
  bool first = true;
  auto reply = infer::stream_reply(g, s.files.tokenizer, ids, options, stops, [&](std::string_view piece) {
    if (first && !a.dump_logits.empty()) {  // the prompt's last-position logits, before the first decode
      auto l = g.logits();
      std::ofstream(a.dump_logits, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), std::streamsize(l.size_bytes()));
    }
    first = false;
    if (first_token < 0) first_token = seconds_since(asked);
    return print_piece(piece);
  });
  std::fputc('\n', stdout);
  print_stats(reply.stats, first_token);
  return 0;
}

int run_chat(const GenerateArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  GenerateSession s(a);
  const auto options = generation_options(a, s);
  infer::Generator g(s.device, s.model, s.adapter ? &*s.adapter : nullptr, {.context = a.context, .act = s.act(a)});
  std::fprintf(stderr, "[model loaded in %.2f s]\n", seconds_since(start));
  std::vector<tok::ChatMessage> messages;
  if (!a.system.empty()) messages.push_back({"system", a.system});
  const bool tty = isatty(STDIN_FILENO);
  std::cerr << "lorastudio chat: " << a.model << (a.adapter.empty() ? "" : " + " + a.adapter)
            << " — /reset clears the history, /quit or Ctrl-D ends\n";
  std::string line;
  for (;;) {
    if (tty) std::cout << "\n> " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      messages.resize(a.system.empty() ? 0 : 1);
      g.reset();
      std::cerr << "(history cleared)\n";
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const auto asked = std::chrono::steady_clock::now();
    double first_token = -1;
    auto reply = infer::chat_turn(g, s.files, messages, options, [&](std::string_view piece) {
      if (first_token < 0) first_token = seconds_since(asked);
      return print_piece(piece);
    });
    if (reply.history_dropped) std::cerr << "\n(context full: the history was dropped)\n";
    messages.push_back({"assistant", reply.text});
    std::cout << "\n";
    print_stats(reply.stats, first_token);
  }
  return 0;
}

}  // namespace ls::app
