#include "demo_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "batch_command.h"
#include "store/run_store.h"
#include "demo/demo_data.h"
#include "demo/demo_model.h"
#include "infer/chat_session.h"
#include "infer/generator.h"
#include "model/peft_adapter.h"
#include "util/local_time.h"
#include "vk/device.h"

namespace ls::app {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kAnswerTokens = 24;  // the learnt shape takes ~15; the base model runs on to this

void print_intro() {
  const auto& s = demo::kDemoShape;
  std::printf(
      "lorastudio demo\n"
      "  The demo model is tiny and untrained: a Qwen2-architecture model with random weights (%.1f M parameters,\n"
      "  hidden %u, %u layers) and the real Qwen2.5 tokenizer. It knows no language. The LoRA adapter trained here\n"
      "  only learns the skill of the demo data: to sort a question into {\"topic\": \"...\", \"kind\": \"...\"}.\n"
      "  For real work, download a real model and train it on your own data, for example:\n"
      "    huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir Qwen2.5-0.5B-Instruct\n"
      "    (or Qwen/Qwen2.5-Coder-0.5B-Instruct; without the Hugging Face CLI:\n"
      "     git clone https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct)\n"
      "    lorastudio --batch --model Qwen2.5-0.5B-Instruct --data my-data.jsonl --out my-run\n\n",
      double(demo::demo_parameter_count()) / 1e6, s.hidden, s.layers);
  std::fflush(stdout);
}

// "making the demo model: weights 40%" on one line (a terminal), or a line at the start and one at the end.
demo::Progress progress_line(bool& started) {
  const bool tty = isatty(STDERR_FILENO);
  return [tty, &started](std::string_view stage, double fraction) {
    if (tty) {
      std::fprintf(stderr, "\rmaking the demo model (first use): %-9.*s %3d%%", int(stage.size()), stage.data(),
                   int(fraction * 100 + 0.5));
    } else if (!started) {
      std::fprintf(stderr, "making the demo model (first use) ...\n");
    }
    started = true;
  };
}

// The reply on one line: line breaks and other control characters written as escapes.
std::string one_line(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out.empty() ? "(nothing: it ended at once)" : out;
}

// The demo data's shape: one JSON object {"topic": "...", "kind": "fact|estimate|unknowable"}.
bool in_shape(const std::string& reply) {
  const auto j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.size() != 2 || !j.contains("topic") || !j["topic"].is_string() ||
      !j.contains("kind") || !j["kind"].is_string())
    return false;
  const std::string k = j["kind"];
  return k == "fact" || k == "estimate" || k == "unknowable";
}

std::string greedy_reply(infer::Generator& g, const infer::ChatModelFiles& files, const std::string& question) {
  g.reset();
  std::vector<tok::ChatMessage> messages = {{"user", question}};
  infer::GenerateOptions options{.max_new_tokens = kAnswerTokens, .sampling = {.temperature = 0}, .stop_ids = files.eos};
  return infer::chat_turn(g, files, messages, options, [](std::string_view) { return true; }).text;
}

}  // namespace

int run_demo(const DemoArgs& a) {
  print_intro();
  const fs::path root = demo::default_data_root();
  bool started = false;
  const auto model = demo::ensure_demo_model(root, progress_line(started));
  if (model.made)
    std::fprintf(stderr, "%smade the demo model in %.1f s: %s\n", isatty(STDERR_FILENO) ? "\n" : "", model.seconds,
                 model.dir.string().c_str());
  else
    std::fprintf(stderr, "demo model: %s\n", model.dir.string().c_str());
  const auto data = demo::ensure_demo_data(root);
  std::fprintf(stderr, "demo data: %s (held out: %s)\n", data.train.string().c_str(), data.validation.string().c_str());

  auto config = demo::demo_train_config(model.dir, data, a.steps ? a.steps : demo::kDemoSteps);
  config.store = store::path_or_default(a.store);
  config.out = a.out.empty() ? config.store.parent_path() / "runs" / ("demo-" + local_stamp()) : fs::path(a.out);
  std::printf("Training a LoRA adapter (rank %u on every projection, %u steps, lr %g) on the demo data; the run\n"
              "goes to the run store %s, where the app shows it.\n",
              config.rank, config.steps, double(config.schedule.lr), config.store.string().c_str());
  std::fflush(stdout);

  vk::Device device({.select = a.device});
  const auto result = train_with_progress(device, config, a.quiet);
  if (result.stopped) return 130;

  const auto m = model::Model::load(device, model.dir);
  const auto files = infer::ChatModelFiles::load(model.dir, m.config);
  const auto adapter = model::load_peft_adapter(device, m.config, result.adapter_dir);
  infer::Generator base(device, m, nullptr, {.context = 512});
  infer::Generator tuned(device, m, &adapter, {.context = 512});
  std::printf("\nHeld-out questions (not in the training data), greedy decoding: the base model, then the adapter.\n");
  const auto prompts = demo::demo_prompts(3);
  size_t base_shaped = 0, tuned_shaped = 0, tuned_right = 0;
  for (const auto& p : prompts) {
    std::printf("\nQ: %s\n", p.question.c_str());
    const std::string before = greedy_reply(base, files, p.question);
    std::printf("  base model:   %s\n", one_line(before).c_str());
    std::fflush(stdout);
    const std::string after = greedy_reply(tuned, files, p.question);
    std::printf("  with adapter: %s\n", one_line(after).c_str());
    std::printf("  (held out:    %s)\n", p.expected.c_str());
    std::fflush(stdout);
    base_shaped += in_shape(before);
    tuned_shaped += in_shape(after);
    tuned_right += after == p.expected;
  }
  std::printf("\nIn the data's JSON shape: the adapter's answers %zu of %zu (the same as held out: %zu), the base "
              "model's %zu of %zu.\n",
              tuned_shaped, prompts.size(), tuned_right, base_shaped, prompts.size());
  std::printf("\nThe adapter: %s (run %lld in the run store; `lorastudio` opens the app, whose Runs and Charts\n"
              "show it). Chat with it: lorastudio chat --model %s --adapter %s\n",
              result.adapter_dir.string().c_str(), static_cast<long long>(result.run_id), model.dir.string().c_str(),
              result.adapter_dir.string().c_str());
  return 0;
}

}  // namespace ls::app
