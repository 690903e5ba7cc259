#pragma once
// `lorastudio generate` and `lorastudio chat`: text generation on a model folder from the terminal.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ls::app {

struct GenerateArgs {
  std::string model, adapter, prompt, system, device, act = "auto", dump_logits, quantize = "none";
  std::string prompts, out;  // generate --prompts FILE.jsonl [--out FILE.jsonl]
  uint32_t batch_size = 16;  // --prompts: sequences decoding together
  bool compare_base = false; // --prompts with --adapter: the base model's replies beside
  uint32_t max_tokens = 256, context = 4096, top_k = 0;
  float temperature = 0.0f, top_p = 1.0f, min_p = 0.0f, repetition_penalty = 1.0f;
  uint64_t seed = 0;
  bool raw = false, ignore_eos = false;
  std::vector<std::string> stop;
};

// Adds the options both commands share to `cmd`.
void add_generation_options(CLI::App& cmd, GenerateArgs& args);

// Streams the reply to stdout; statistics (tokens/s of prefill and decode) to stderr. Returns the exit code.
// With --prompts, a reply to every line of a JSON Lines file (app/generate_batch.h).
int run_generate(const GenerateArgs& args);
// Interactive chat on stdin/stdout with the model's chat template and the history kept in the KV cache.
int run_chat(const GenerateArgs& args);

}  // namespace ls::app
