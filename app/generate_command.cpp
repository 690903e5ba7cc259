#include "generate_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "error.h"
#include "infer/generator.h"
#include "infer/text_stream.h"
#include "model/peft_adapter.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "vk/device.h"

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
  cmd.add_option("--device", a.device, "Vulkan device: number from --devices or part of its name");
  cmd.add_option("--dump-logits", a.dump_logits, "write the prompt's last-position logits (raw f32) to this file")
      ->group("");  // for checks against other engines
}

namespace {

struct Session {
  vk::Device device;
  model::Model model;
  tok::Tokenizer tokenizer;
  tok::ChatTemplate chat;
  std::optional<model::LoraAdapter> adapter;
  std::vector<int32_t> eos;

  explicit Session(const GenerateArgs& a)
      : device({.select = a.device}),
        model(load_model(device, a.model)),
        tokenizer(load_tokenizer(a.model)),
        chat(load_template(a.model)) {
    if (!a.adapter.empty()) adapter = model::load_peft_adapter(device, model.config, a.adapter);
    if (!a.ignore_eos) eos = eos_ids(a.model);
  }

  static model::Model load_model(vk::Device& device, const std::string& dir) { return model::Model::load(device, dir); }
  static tok::Tokenizer load_tokenizer(const std::string& dir) {
    if (!fs::exists(fs::path(dir) / "tokenizer.json"))
      throw Error(dir + ": no tokenizer.json in the model folder (lorastudio needs the model's own tokenizer)");
    return tok::Tokenizer::load(dir);
  }
  static tok::ChatTemplate load_template(const std::string& dir) {
    std::vector<std::string> warnings;
    auto path = fs::path(dir) / "tokenizer_config.json";
    auto t = fs::exists(path) ? tok::ChatTemplate::from_tokenizer_config(path, &warnings)
                              : tok::ChatTemplate::recognise("", path.string(), &warnings);
    for (const auto& w : warnings) std::cerr << "lorastudio: warning: " << w << "\n";
    return t;
  }
  // End-of-sequence ids: config.json's, generation_config.json's and the tokenizer's eos token.
  std::vector<int32_t> eos_ids(const std::string& dir) const {
    std::set<int32_t> ids(model.config.eos_token_ids.begin(), model.config.eos_token_ids.end());
    if (auto e = tokenizer.eos_id()) ids.insert(*e);
    auto gen = fs::path(dir) / "generation_config.json";
    if (fs::exists(gen)) {
      try {
        auto j = nlohmann::json::parse(std::ifstream(gen));
        if (j.contains("eos_token_id")) {
          const auto& e = j["eos_token_id"];
          if (e.is_number_integer()) ids.insert(e.get<int32_t>());
          if (e.is_array())
            for (const auto& x : e) ids.insert(x.get<int32_t>());
        }
      } catch (const std::exception& ex) {
        throw Error(gen.string() + ": " + ex.what());
      }
    }
    return {ids.begin(), ids.end()};
  }

  DType act(const GenerateArgs& a) const {
    if (a.act == "f32") return DType::f32;
    if (a.act == "f16") return DType::f16;
    return device.report().float16 && device.coopmat() ? DType::f16 : DType::f32;
  }
};

infer::GenerateOptions generate_options(const GenerateArgs& a, const Session& s) {
  infer::GenerateOptions o;
  o.max_new_tokens = a.max_tokens;
  o.sampling = {.temperature = a.temperature, .top_k = a.top_k, .top_p = a.top_p, .min_p = a.min_p,
                .repetition_penalty = a.repetition_penalty, .seed = a.seed};
  infer::validate(o.sampling);
  o.stop_ids = s.eos;
  return o;
}

void print_stats(const infer::GenerateStats& st) {
  std::fprintf(stderr, "\n[prefill %u tokens: %.1f tok/s | decode %u tokens: %.1f tok/s | stop: %s]\n", st.prompt_tokens,
               st.prefill_tokens_per_second(), st.new_tokens, st.decode_tokens_per_second(), st.stop_reason.c_str());
}

// Generates a reply to the context the generator holds plus `prompt`, streaming it to stdout.
std::pair<std::string, infer::GenerateStats> stream_reply(Session& s, infer::Generator& g, std::span<const int32_t> prompt,
                                                          const infer::GenerateOptions& o, std::vector<std::string> stops,
                                                          const std::string& dump_logits = "") {
  infer::TextStream text(s.tokenizer, std::move(stops));
  bool first = true;
  auto stats = g.generate(prompt, o, [&](int32_t id) {
    if (first && !dump_logits.empty()) {
      auto l = g.logits();
      std::ofstream(dump_logits, std::ios::binary).write(reinterpret_cast<const char*>(l.data()), std::streamsize(l.size_bytes()));
    }
    first = false;
    std::string piece = text.push(id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return !text.stopped();
  });
  std::string rest = text.finish();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  if (text.stopped()) stats.stop_reason = "stop string";
  std::fflush(stdout);
  return {text.text(), stats};
}

}  // namespace

int run_generate(const GenerateArgs& a) {
  Session s(a);
  const auto options = generate_options(a, s);
  infer::Generator g(s.device, s.model, s.adapter ? &*s.adapter : nullptr, {.context = a.context, .act = s.act(a)});
  std::string text = a.prompt;
  std::vector<std::string> stops = a.stop;
  if (!a.raw) {
    std::vector<tok::ChatMessage> messages;
    if (!a.system.empty()) messages.push_back({"system", a.system});
    messages.push_back({"user", a.prompt});
    text = s.chat.render_text(messages, true);
    for (auto& st : s.chat.stop_strings()) stops.push_back(st);
  }
  auto ids = s.tokenizer.encode(text, false);
  if (ids.empty()) throw Error("generate: the prompt is empty");
  auto [reply, stats] = stream_reply(s, g, ids, options, stops, a.dump_logits);
  std::fputc('\n', stdout);
  print_stats(stats);
  return 0;
}

int run_chat(const GenerateArgs& a) {
  Session s(a);
  const auto options = generate_options(a, s);
  infer::Generator g(s.device, s.model, s.adapter ? &*s.adapter : nullptr, {.context = a.context, .act = s.act(a)});
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
    auto ids = s.tokenizer.encode(s.chat.render_text(messages, true), false);
    // Reuse the KV cache for the longest common prefix of the re-rendered conversation.
    auto ctx = g.context();
    size_t common = 0;
    while (common < ctx.size() && common < ids.size() && ctx[common] == ids[common]) ++common;
    if (common == ids.size()) --common;  // at least one token to prefill, for fresh logits
    if (ids.size() + a.max_tokens > g.capacity()) {  // no room: start over with this turn only
      std::cerr << "(context full: the history was dropped)\n";
      messages.erase(messages.begin() + (a.system.empty() ? 0 : 1), messages.end() - 1);
      ids = s.tokenizer.encode(s.chat.render_text(messages, true), false);
      common = 0;
    }
    g.truncate(uint32_t(common));
    auto [reply, stats] = stream_reply(s, g, std::span(ids).subspan(common), options, s.chat.stop_strings());
    messages.push_back({"assistant", reply});
    std::cout << "\n";
    print_stats(stats);
  }
  return 0;
}

}  // namespace ls::app
