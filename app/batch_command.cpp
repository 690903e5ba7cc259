#include "batch_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <sstream>

#include "error.h"
#include "toml_config.h"
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
  g->add_option("--model", c.model, "Hugging Face model folder");
  g->add_option("--data", c.data, "training data, JSONL: {\"text\"}, {\"prompt\", \"completion\"} or {\"messages\"} per line");
  g->add_option("--out", c.out, "run folder for the adapter, checkpoints, config and metrics")->capture_default_str();
  g->add_option("--val-data", c.data_options.validation_file, "validation JSONL");
  g->add_option("--val-fraction", a.val_fraction, "hold out this share of --data for validation instead");
  g->add_option("--steps", c.steps, "optimizer steps (0: as many as --epochs give)")->capture_default_str();
  g->add_option("--epochs", c.data_options.epochs, "passes over the data")->capture_default_str();
  g->add_option("--lr", c.schedule.lr, "peak learning rate")->capture_default_str();
  g->add_option("--schedule", a.schedule, "constant, linear or cosine decay after the warmup")->capture_default_str();
  g->add_option("--warmup", c.schedule.warmup_steps, "linear warmup steps")->capture_default_str();
  g->add_option("--rank", c.rank, "LoRA rank r")->capture_default_str();
  g->add_option("--alpha", c.alpha, "LoRA alpha (scale alpha / r)")->capture_default_str();
  g->add_flag("--rslora", c.rslora, "scale alpha / sqrt(r) (rsLoRA)");
  g->add_option("--dropout", c.dropout, "LoRA dropout (0 only, for now)")->capture_default_str();
  g->add_option("--targets", a.targets, "projections to adapt: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
      ->capture_default_str();
  g->add_option("--batch-size", c.batch_size, "sequences per micro-batch")->capture_default_str();
  g->add_option("--seq-len", c.data_options.max_seq_len, "longest sequence; longer examples are truncated")
      ->capture_default_str();
  g->add_option("--grad-accum", c.grad_accum, "micro-batches per optimizer step")->capture_default_str();
  g->add_option("--weight-decay", c.optimizer.weight_decay, "AdamW weight decay")->capture_default_str();
  g->add_option("--max-grad-norm", c.optimizer.max_grad_norm, "clip the global gradient norm (0: off)")
      ->capture_default_str();
  g->add_option("--val-every", c.val_every, "steps between validation losses (0: at the end)")->capture_default_str();
  g->add_option("--save-every", c.save_every, "steps between checkpoints (0: none; the adapter is written at the end and on Ctrl-C)")->capture_default_str();
  g->add_option("--seed", c.seed, "seed of the LoRA initialisation and of the data order")->capture_default_str();
  g->add_flag("--train-on-prompt", c.data_options.train_on_prompt, "also train on prompts and user turns");
  g->add_flag("--pack", c.data_options.pack, "pack short examples into full rows");
  g->add_flag("--skip-bad-lines", c.data_options.skip_bad_lines, "report and skip malformed JSONL lines");
  g->add_option("--resume", c.resume, "continue from a checkpoint-N folder of a run with the same options");
  g->add_option("--store", a.store, "run store (SQLite) path (default: ~/.local/share/lorastudio/runs.sqlite)");
  g->add_flag("--quiet", a.quiet, "no progress output");
  g->add_flag("--profile", c.profile, "store GPU time per op group every step in the run store (timestamps around every dispatch)");
  add_toml_config(app, "--config",
                  "TOML file with any of these options: key = value, keys named like the long options (batch_size or "
                  "batch-size = 4; targets = [\"q_proj\", \"v_proj\"]); options on the command line win");
}

int run_batch(BatchArgs& a) {
  auto& c = a.config;
  if (c.model.empty() || c.data.empty()) throw Error("--batch needs --model DIR and --data FILE.jsonl");
  if (c.out.empty()) throw Error("--out must name a folder");
  c.targets.clear();
  std::stringstream ss(a.targets);
  for (std::string t; std::getline(ss, t, ',');) {
    auto target = model::parse_target(t);
    if (!target) throw Error("--targets: \"" + t + "\" is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    c.targets.push_back(*target);
  }
  auto kind = train::parse_schedule_kind(a.schedule);
  if (!kind) throw Error("--schedule: \"" + a.schedule + "\" is not constant, linear or cosine");
  c.schedule.kind = *kind;
  c.data_options.validation_fraction = a.val_fraction;
  c.data_options.seed = c.seed;
  c.store = a.store;
  vk::Device device({.select = a.device});
  std::signal(SIGINT, on_sigint);
  const bool tty = isatty(STDERR_FILENO);
  auto result = train::train(device, c, [&](const train::StepReport& r) {
    if (!a.quiet) {
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
  });
  std::fprintf(stderr, "%s%s after %u steps: loss %.4f -> %.4f; adapter in %s (run %lld)\n", tty ? "\n" : "",
               result.stopped ? "stopped" : "done", result.steps, result.first_loss, result.last_loss,
               result.adapter_dir.string().c_str(), static_cast<long long>(result.run_id));
  return result.stopped ? 130 : 0;
}

}  // namespace ls::app
