#include "batch_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "error.h"
#include "model/config.h"
#include "model/lora_init.h"
#include "plan_command.h"
#include "toml_config.h"
#include "train/option_help.h"
#include "vk/device.h"

namespace ls::app {

namespace {
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

std::string duration(double s) {
  char buf[32];
  int v = int(s + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", v / 3600, v / 60 % 60, v % 60);
  return buf;
}
}  // namespace

void add_batch_options(CLI::App& app, BatchArgs& a) {
  auto& c = a.config;
  auto* g = app.add_option_group("Training (--batch)", "headless LoRA training");
  namespace h = train::option_help;
  g->add_option(h::kModel.flag, c.model, h::kModel.text);
  g->add_option(h::kData.flag, c.data, h::kData.text);
  g->add_option(h::kOut.flag, c.out, h::kOut.text)->capture_default_str();
  g->add_option(h::kValData.flag, c.data_options.validation_file, h::kValData.text);
  g->add_option(h::kValFraction.flag, a.val_fraction, h::kValFraction.text);
  g->add_option(h::kSteps.flag, c.steps, h::kSteps.text)->capture_default_str();
  g->add_option(h::kEpochs.flag, c.data_options.epochs, h::kEpochs.text)->capture_default_str();
  g->add_option(h::kLr.flag, c.schedule.lr, h::kLr.text)->capture_default_str();
  g->add_option(h::kSchedule.flag, a.schedule, h::kSchedule.text)->capture_default_str();
  g->add_option(h::kWarmup.flag, c.schedule.warmup_steps, h::kWarmup.text)->capture_default_str();
  g->add_option(h::kRank.flag, c.rank, h::kRank.text)->capture_default_str();
  g->add_option(h::kAlpha.flag, c.alpha, h::kAlpha.text)->capture_default_str();
  g->add_flag(h::kRslora.flag, c.rslora, h::kRslora.text);
  g->add_option(h::kDropout.flag, c.dropout, h::kDropout.text)->capture_default_str();
  g->add_option(h::kQuantize.flag, a.quantize, h::kQuantize.text)->capture_default_str();
  g->add_option(h::kTargets.flag, a.targets, h::kTargets.text)->capture_default_str();
  g->add_option(h::kBatchSize.flag, c.batch_size, h::kBatchSize.text)->capture_default_str();
  g->add_option(h::kSeqLen.flag, c.data_options.max_seq_len, h::kSeqLen.text)->capture_default_str();
  g->add_option(h::kGradAccum.flag, c.grad_accum, h::kGradAccum.text)->capture_default_str();
  g->add_option(h::kWeightDecay.flag, c.optimizer.weight_decay, h::kWeightDecay.text)->capture_default_str();
  g->add_option(h::kMaxGradNorm.flag, c.optimizer.max_grad_norm, h::kMaxGradNorm.text)->capture_default_str();
  g->add_option(h::kValEvery.flag, c.val_every, h::kValEvery.text)->capture_default_str();
  g->add_option(h::kSaveEvery.flag, c.save_every, h::kSaveEvery.text)->capture_default_str();
  g->add_option(h::kSeed.flag, c.seed, h::kSeed.text)->capture_default_str();
  g->add_flag(h::kTrainOnPrompt.flag, c.data_options.train_on_prompt, h::kTrainOnPrompt.text);
  g->add_flag(h::kPack.flag, c.data_options.pack, h::kPack.text);
  g->add_flag(h::kGradCheckpoint.flag, c.grad_checkpoint, h::kGradCheckpoint.text);
  g->add_flag(h::kSkipBadLines.flag, c.data_options.skip_bad_lines, h::kSkipBadLines.text);
  g->add_option(h::kOnNonFinite.flag, a.on_non_finite, h::kOnNonFinite.text)->capture_default_str();
  g->add_option(h::kResume.flag, c.resume, h::kResume.text);
  g->add_option(h::kStore.flag, a.store, h::kStore.text);
  g->add_flag("--quiet", a.quiet, "no progress output");
  g->add_flag(h::kProfile.flag, c.profile, h::kProfile.text);
  g->add_flag(h::kPlan.flag, a.plan, h::kPlan.text);
  add_toml_config(app, "--config",
                  "TOML file with any of these options: key = value, keys named like the long options (batch_size or "
                  "batch-size = 4; targets = [\"q_proj\", \"v_proj\"]); options on the command line win");
}

train::TrainConfig resolve_batch_args(const BatchArgs& a) {
  train::TrainConfig c = a.config;
  c.targets.clear();
  std::stringstream ss(a.targets.empty() ? "q_proj,v_proj" : a.targets);
  for (std::string t; std::getline(ss, t, ',');) {
    auto target = model::parse_target(t);
    if (!target) throw Error("--targets: \"" + t + "\" is not one of " + model::target_names_list());
    c.targets.push_back(*target);
  }
  // The default, as the app's ticks: q_proj and v_proj are Phi-3's qkv_proj. Targets given are kept as given
  // (one the model lacks is refused, naming its projections). A model folder that cannot be read is named by
  // the training's own load, with its reason.
  if (a.targets.empty() && !c.model.empty()) {
    std::optional<model::ModelConfig> config;
    try {
      config = model::load_config(c.model);
    } catch (const Error&) {
    }
    if (config) c.targets = model::fit_targets(*config, c.targets);
  }
  auto kind = train::parse_schedule_kind(a.schedule);
  if (!kind) throw Error("--schedule: \"" + a.schedule + "\" is not constant, linear or cosine");
  c.schedule.kind = *kind;
  const auto quant = parse_quant(a.quantize);
  if (!quant) throw Error("--quantize: \"" + a.quantize + "\" is not nf4, q8 or none");
  c.quantize = *quant;
  const auto policy = train::parse_non_finite_policy(a.on_non_finite);
  if (!policy) throw Error("--on-nonfinite: \"" + a.on_non_finite + "\" is not stop or skip");
  c.on_non_finite = *policy;
  c.data_options.validation_fraction = a.val_fraction;
  c.data_options.seed = c.seed;
  c.store = a.store;
  return c;
}

std::string resolved_config_json(const std::filesystem::path& toml_file) {
  CLI::App app;
  BatchArgs args;
  add_batch_options(app, args);
  std::vector<std::string> argv = {toml_file.string(), "--config"};  // CLI11 takes them last first
  try {
    app.parse(argv);
  } catch (const CLI::FileError& e) {
    throw Error("--config: " + std::string(e.what()));
  } catch (const CLI::ParseError& e) {
    throw Error(toml_file.string() + ": " + e.what());
  }
  const std::string where = toml_file.string() + ": ";
  if (args.config.model.empty()) throw Error(where + "sets no model (model = \"DIR\"), so it describes no run");
  if (args.config.data.empty()) throw Error(where + "sets no data (data = \"FILE.jsonl\"), so it describes no run");
  return train::config_json(resolve_batch_args(args));
}

int run_batch(BatchArgs& a) {
  if (a.plan) return run_plan(resolve_batch_args(a), a.device);
  if (a.config.model.empty() || a.config.data.empty()) throw Error("--batch needs --model DIR and --data FILE.jsonl");
  if (a.config.out.empty()) throw Error("--out must name a folder");
  a.config = resolve_batch_args(a);
  auto& c = a.config;
  vk::Device device({.select = a.device});
  return train_with_progress(device, c, a.quiet).stopped ? 130 : 0;
}

train::TrainResult train_with_progress(vk::Device& device, const train::TrainConfig& c, bool quiet) {
  g_interrupted = false;
  std::signal(SIGINT, on_sigint);
  const bool tty = isatty(STDERR_FILENO);
  auto result = train::train(device, c, [&](const train::StepReport& r) {
    if (r.skipped) {  // said even when quiet, on a line of its own: the run's weights skipped this step
      std::fprintf(stderr, "%slorastudio: warning: step %u/%u skipped (--on-nonfinite skip): %s; its update was not "
                   "applied\n", tty && !quiet ? "\n" : "", r.step, r.total, r.skip_reason.c_str());
      return !g_interrupted;
    }
    if (!quiet) {
      const double eta = r.step ? r.elapsed_s / r.step * (r.total - r.step) : 0;
      char line[256];
      std::snprintf(line, sizeof line, "step %u/%u  loss %.4f%s  lr %.2e  grad %.3f  %.0f tok/s  ETA %s", r.step, r.total,
                    r.loss, r.val_loss ? ("  val " + std::to_string(*r.val_loss).substr(0, 6)).c_str() : "", r.lr,
                    r.grad_norm, r.tokens_per_s, duration(eta).c_str());
      if (tty) {
        const int width = 24, filled = int(double(r.step) / r.total * width);
        std::fprintf(stderr, "\r[%s%s] %s", std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(width - filled), '.').c_str(), line);
        if (r.step == r.total) std::fputc('\n', stderr);
      } else {
        std::fprintf(stderr, "%s\n", line);
      }
    }
    return !g_interrupted;
  }, nullptr, [](const std::string& warning) { std::fprintf(stderr, "lorastudio: warning: %s\n", warning.c_str()); },
  [&](const train::RunStart& s) {
    if (!quiet)
      std::fprintf(stderr, "run %lld: %u steps of %u x %u tokens; %s\n", static_cast<long long>(s.run_id), s.total_steps,
                   s.batch, s.seq_len, s.memory.c_str());
  });
  const std::string skipped =
      result.skipped_steps ? " (" + std::to_string(result.skipped_steps) + " skipped: loss or gradient not finite)" : "";
  std::fprintf(stderr, "%s%s after %u steps%s: loss %.4f -> %.4f; adapter in %s (run %lld)\n", tty ? "\n" : "",
               result.stopped ? "stopped" : "done", result.steps, skipped.c_str(), result.first_loss, result.last_loss,
               result.adapter_dir.string().c_str(), static_cast<long long>(result.run_id));
  return result;
}

}  // namespace ls::app
