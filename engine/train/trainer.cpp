#include "train/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/lora_init.h"
#include "model/peft_adapter.h"
#include "model/training.h"
#include "ops/optimizer.h"
#include "store/metrics_export.h"
#include "store/run_store.h"
#include "tokenizer/tokenizer.h"
#include "train/batcher.h"
#include "train/checkpoint.h"
#include "train/optimizer_update.h"
#include "train/plan_fit.h"
#include "train/run_data.h"
#include "train/run_shape.h"
#include "train/run_entry.h"
#include "util/atomic_file.h"
#include "vk/device_lost.h"

namespace ls::train {

namespace fs = std::filesystem;
using model::LoraAdapter;

std::optional<NonFinitePolicy> parse_non_finite_policy(std::string_view name) {
  if (name == "stop") return NonFinitePolicy::stop;
  if (name == "skip") return NonFinitePolicy::skip;
  return std::nullopt;
}

const char* non_finite_policy_name(NonFinitePolicy policy) {
  return policy == NonFinitePolicy::skip ? "skip" : "stop";
}

void validate(const TrainConfig& c) {
  auto fail = [](const std::string& what) { throw Error("training options: " + what); };
  if (c.model.empty()) fail("--model is required");
  if (c.data.empty()) fail("--data is required");
  if (c.targets.empty()) fail("--targets names no projection");
  if (c.rank == 0) fail("--rank must be at least 1");
  if (!(c.alpha > 0)) fail("--alpha must be positive");
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("--dropout must be at least 0 and below 1");
  if (c.batch_size == 0) fail("--batch-size must be at least 1");
  if (c.grad_accum == 0) fail("--grad-accum must be at least 1");
  if (!(c.schedule.lr > 0) || !std::isfinite(c.schedule.lr)) fail("--lr must be a positive number");
  train::validate(c.data_options);
}

std::string config_json(const TrainConfig& c) {
  nlohmann::json targets = nlohmann::json::array();
  for (auto t : c.targets) targets.push_back(std::string(model::target_name(t)));
  const auto& d = c.data_options;
  nlohmann::json j = {
      {"model", c.model.string()}, {"data", c.data.string()}, {"out", c.out.string()},
      {"val_data", d.validation_file.string()}, {"val_fraction", d.validation_fraction},
      {"targets", targets}, {"rank", c.rank}, {"alpha", c.alpha}, {"dropout", c.dropout}, {"rslora", c.rslora},
      {"quantize", quant_name(c.quantize)},
      {"batch_size", c.batch_size}, {"grad_accum", c.grad_accum}, {"seq_len", d.max_seq_len}, {"steps", c.steps},
      {"epochs", d.epochs}, {"lr", c.schedule.lr}, {"schedule", schedule_kind_name(c.schedule.kind)},
      {"warmup", c.schedule.warmup_steps}, {"beta1", c.optimizer.beta1}, {"beta2", c.optimizer.beta2},
      {"eps", c.optimizer.eps}, {"weight_decay", c.optimizer.weight_decay},
      {"max_grad_norm", c.optimizer.max_grad_norm}, {"grad_checkpoint", c.grad_checkpoint}, {"train_on_prompt", d.train_on_prompt}, {"pack", d.pack},
      {"skip_bad_lines", d.skip_bad_lines},
      {"shuffle", d.shuffle}, {"data_seed", d.seed}, {"seed", c.seed}, {"val_every", c.val_every},
      {"save_every", c.save_every}, {"resume", c.resume.string()},
      {"on_nonfinite", non_finite_policy_name(c.on_non_finite)}};
  return j.dump(2);
}

namespace {

// The path from the filesystem's root, without "." or ".." parts or a trailing separator (a run's name is
// its folder's name: "runs/a/" is "a").
fs::path absolute_folder_or_file(const fs::path& p) {
  fs::path a = fs::absolute(p).lexically_normal();
  if (!a.has_filename() && a.has_parent_path() && a != a.root_path()) a = a.parent_path();
  return a;
}

// One recorded forward+backward over a [B, T] batch held in host-visible tensors.
struct StepProgram {
  model::TrainBatch batch;
  Tensor loss;
  vk::Program program;
  std::vector<int32_t> rows, row_targets, slots;  // the loss's rows (model::fill_loss_rows), when K < B*T
  // dropout_seed: the masks of LoRA dropout for this replay (ignored when the step has no dropout).
  double run(const Batch& b, std::array<uint32_t, 2> dropout_seed = {}) {
    upload(batch.ids, b.ids);
    upload(batch.targets, b.targets);
    if (batch.loss_rows.defined()) {
      model::fill_loss_rows(b.targets, rows, row_targets, slots);
      upload(batch.loss_rows, rows);
      upload(batch.loss_targets, row_targets);
      upload(batch.loss_slots, slots);
    }
    if (batch.dropout_seed.defined())
      upload(batch.dropout_seed, std::vector<int32_t>{int32_t(dropout_seed[0]), int32_t(dropout_seed[1])});
    program.run();
    return static_cast<const float*>(loss.mapped())[0];
  }
};

// K: the rows the loss runs over, or 0 for all B*T (when the rows with a target are not fewer).
StepProgram record_step(vk::Device& dev, const model::Model& m, const LoraAdapter& adapter, const LoraAdapter& grads,
                        uint32_t B, uint32_t T, uint32_t K, const model::StepOptions& options, bool profile) {
  StepProgram s;
  const uint32_t M = B * T;
  std::vector<int32_t> positions(M);
  for (uint32_t i = 0; i < M; ++i) positions[i] = int32_t(i % T);
  s.batch = {.B = B, .T = T, .ids = Tensor::empty_host(dev, {M}, DType::i32, "ids"),
             .positions = Tensor::empty(dev, {M}, DType::i32, "positions"),
             .targets = Tensor::empty_host(dev, {M}, DType::i32, "targets")};
  if (K > 0 && K < M) {
    s.batch.loss_rows = Tensor::empty_host(dev, {K}, DType::i32, "loss rows");
    s.batch.loss_targets = Tensor::empty_host(dev, {K}, DType::i32, "loss targets");
    s.batch.loss_slots = Tensor::empty_host(dev, {M}, DType::i32, "loss slots");
    s.rows.resize(K), s.row_targets.resize(K), s.slots.resize(M);
  }
  upload(s.batch.positions, positions);
  if (options.dropout > 0) s.batch.dropout_seed = Tensor::empty_host(dev, {2}, DType::i32, "dropout seed");
  s.loss = Tensor::empty_host(dev, {2}, DType::f32, "loss");
  vk::Recorder rec(dev, {.profile = profile});
  model::record_train_step(rec, m, adapter, grads, s.batch, s.loss, options);
  s.program = rec.finish();
  return s;
}

// Adds a profiled program's latest GPU times to the groups (unlabelled dispatches go to `fallback`).
void add_timings(std::vector<store::GpuTime>& groups, const vk::Program& program, const std::string& fallback) {
  for (const auto& t : program.timings()) {
    const std::string& name = t.name == t.kernel ? fallback : t.name;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const store::GpuTime& g) { return g.group == name; });
    if (it == groups.end()) it = groups.insert(groups.end(), {name, 0.0});
    it->ms += t.ns / 1e6;
  }
}

std::vector<store::GpuTime> empty_groups() {
  std::vector<store::GpuTime> g;
  for (const char* name : {model::kGroupEmbedding, model::kGroupNorms, model::kGroupAttention, model::kGroupMlp, "lora",
                           model::kGroupLoss, "optimizer"})
    g.push_back({name, 0.0});
  return g;
}

double mean_loss(StepProgram& s, std::span<const Example> rows, uint32_t B, uint32_t T, int32_t pad) {
  Batcher b(rows, evaluation_batches(B, T, pad));
  double sum = 0, count = 0;
  Batch batch;
  while (b.next(batch)) {
    if (batch.trained_tokens == 0) continue;
    sum += s.run(batch) * batch.trained_tokens;
    count += batch.trained_tokens;
  }
  return count > 0 ? sum / count : std::nan("");
}

}  // namespace

TrainResult train(vk::Device& dev, const TrainConfig& c_in, const std::function<bool(const StepReport&)>& on_step,
                  RunControl* control, const std::function<void(const std::string&)>& on_warning,
                  const std::function<void(const RunStart&)>& on_start) {
  TrainConfig c = c_in;
  validate(c);
  model::check_targets(model::load_config(c.model), c.targets, (c.model / "config.json").string() + " (--targets)");
  const RunData run_data = load_run_data(c);
  const tok::Tokenizer& tokenizer = run_data.tokenizer;
  const Dataset& data = run_data.data;
  if (on_warning)
    for (const auto& w : run_data.warnings) on_warning(w);
  // The memory plan, before the weights take any: a run that cannot fit stops here, saying what to change.
  const RunShape shape = run_shape(c, data);
  const PlanOptions planned_for = plan_options(dev, c, shape);
  const MemoryPlan plan = memory_plan(planned_for);
  const vk::MemoryBudget budget = dev.memory_budget();
  require_fit(planned_for, plan, budget, dev.report().name);
  const auto model = model::Model::load(dev, c.model, c.quantize);
  const int32_t pad = pad_token(tokenizer);
  const uint32_t T = shape.seq_len;
  const uint32_t B = c.batch_size;
  Batcher batcher(data.train, training_batches(c.data_options, B, T, pad));
  const uint32_t total = c.steps ? c.steps : uint32_t((batcher.total_batches() + c.grad_accum - 1) / c.grad_accum);
  c.schedule.total_steps = total;

  // Read before the run entry is chosen: the checkpoint names the entry a resumed run continues.
  const CheckpointState resume_state = c.resume.empty() ? CheckpointState{} : read_checkpoint_state(c.resume);
  fs::create_directories(c.out);
  remove_interrupted_writes(c.out);  // of an attempt in this folder that was killed mid-write
  // config.json and the store name the run's files from the root, for readers in any folder (export --trl, the
  // app); messages name them as they were given.
  TrainConfig recorded = c;
  for (fs::path* p : {&recorded.model, &recorded.data, &recorded.data_options.validation_file, &recorded.out,
                      &recorded.resume})
    if (!p->empty()) *p = absolute_folder_or_file(*p);
  const std::string cfg = config_json(recorded);
  write_file_atomically(c.out / "config.json", cfg);
  store::RunStore runs(store::path_or_default(c.store));
  const int64_t run_id = open_run_entry(runs,
                                        {.name = recorded.out.filename().string(), .model_path = recorded.model,
                                         .data_path = recorded.data,
                                         .config_json = cfg, .out_dir = recorded.out},
                                        c.resume, resume_state)
                             .id;
  std::error_code ec;
  const CheckpointState checkpoint_state{.run_id = run_id, .store = fs::absolute(runs.path(), ec)};

  TrainResult result;
  result.run_id = run_id;
  try {
    // One allocation for the adapter's matrices, as for its gradients and moments: one dispatch zeroes the
    // gradients, one updates every matrix (model::flat_like).
    LoraAdapter adapter = model::flat_like(
        dev, model::init_lora(dev, model.config, c.targets, c.rank, c.alpha, c.rslora, c.dropout, c.seed), true);
    LoraAdapter grads = model::zero_grads_like(dev, adapter), m1 = model::zero_grads_like(dev, adapter),
                m2 = model::zero_grads_like(dev, adapter);
    uint32_t first_step = 1;
    if (!c.resume.empty()) first_step = load_checkpoint(dev, c.resume, model.config, adapter, m1, m2, batcher) + 1;
    StepProgram step = record_step(
        dev, model, adapter, grads, B, T, shape.loss_rows,
        {.loss_scale = 1.0f / float(c.grad_accum), .dropout = c.dropout, .recompute = c.grad_checkpoint}, c.profile);
    std::optional<StepProgram> eval;
    LoraAdapter eval_grads;
    if (!data.validation.empty()) {
      eval_grads = model::zero_grads_like(dev, adapter);
      // No dropout, as under PEFT's eval().
      eval = record_step(dev, model, adapter, eval_grads, B, T, shape.validation_loss_rows,
                         {.recompute = c.grad_checkpoint}, false);
    }
    // Zeroing, and the update: global norm -> clip factor -> AdamW on every matrix.
    Tensor hyper = Tensor::empty_host(dev, {ops::kHyperSlots}, DType::f32, "hyper");
    Tensor sumsq = Tensor::empty(dev, {1}, DType::f32, "grad sumsq"), norm = Tensor::empty_host(dev, {1}, DType::f32, "grad norm");
    vk::Program zero, update;
    {
      vk::Recorder rec(dev, {.profile = c.profile});
      record_zero_grads(rec, grads);
      zero = rec.finish();
    }
    {
      vk::Recorder rec(dev, {.profile = c.profile});
      record_optimizer_update(rec, adapter, grads, m1, m2, hyper, sumsq, norm, c.optimizer.max_grad_norm);
      update = rec.finish();
    }
    auto checkpoint = [&](uint32_t at) {
      auto state = checkpoint_state;
      state.step = at;
      write_checkpoint(c.out, at, adapter, m1, m2, model.config, c.model, batcher.state(), state);
      runs.add_checkpoint(run_id, at, checkpoint_dir(c.out, at));
    };
    // The run's adapter and metrics.csv as they are now: at the end, or when a non-finite step stops the run.
    auto save_adapter = [&] {
      result.adapter_dir = c.out / "adapter";
      model::save_peft_adapter(adapter, model.config, result.adapter_dir, c.model.string());
      runs.add_export(run_id, result.adapter_dir, store::ExportFormat::peft);
      store::write_metrics_csv(c.out / "metrics.csv", runs.metrics(run_id));
    };

    if (on_start)
      on_start({.run_id = run_id, .total_steps = total, .batch = B, .seq_len = T, .planned_bytes = plan.total(),
                .available_bytes = budget.available(), .memory = plan_summary(plan, budget)});
    const auto t_start = std::chrono::steady_clock::now();
    Batch batch;
    bool data_left = true;
    uint32_t consecutive_skips = 0;  // --on-nonfinite skip
    bool logged_any = false;         // a step's metrics were stored (result.first_loss is set)
    uint32_t at_step = first_step;  // the step under way, for a lost device's message
    try {
      for (uint32_t s = first_step; s <= total && data_left; ++s) {
        at_step = s;
        const auto t0 = std::chrono::steady_clock::now();
        zero.run();
        std::vector<store::GpuTime> gpu_ms;
        if (c.profile) gpu_ms = empty_groups(), add_timings(gpu_ms, zero, "optimizer");
        double loss_sum = 0;
        uint32_t micro = 0, tokens = 0;
        for (; micro < c.grad_accum; ++micro) {
          if (!batcher.next(batch)) {
            if (c.steps == 0) break;
            batcher.restore({.seed = batcher.state().seed, .shuffle = batcher.state().shuffle, .rows = batcher.state().rows});
            if (!batcher.next(batch)) break;
          }
          // Dropout masks: a function of the run's seed and the micro-batch's number, so a resumed run
          // draws the masks the uninterrupted one drew.
          const uint32_t seed_word = uint32_t(c.seed) ^ uint32_t(c.seed >> 32);
          loss_sum += step.run(batch, {seed_word, (s - 1) * c.grad_accum + micro});
          if (c.profile) add_timings(gpu_ms, step.program, "other");
          tokens += batch.trained_tokens;
        }
        if (micro == 0) {
          data_left = false;
          break;
        }
        // A NaN or infinite loss or gradient never reaches the weights: the host skips the update for a
        // non-finite loss, the device skips it for a non-finite gradient norm (ops::clip_scale). By default
        // the run stops there, its adapter (the weights of the step before) saved; with --on-nonfinite skip
        // the step is recorded as skipped and the run goes on, unless it skips kMaxConsecutiveSkips in a row.
        auto stop_non_finite = [&](const std::string& what) {
          save_adapter();
          std::ostringstream msg;
          msg << "step " << s << ": " << what << "; its update was not applied. The adapter as of step " << s - 1
              << " is saved in " << result.adapter_dir.string() << ". Training diverged: lower --lr (now "
              << c.schedule.lr << ") or keep --max-grad-norm on (now " << c.optimizer.max_grad_norm
              << "), then train again or --resume from a checkpoint";
          if (consecutive_skips > 0)
            msg << " (" << consecutive_skips + 1 << " steps in a row were not finite; --on-nonfinite skip stops at "
                << kMaxConsecutiveSkips << ")";
          throw Error(msg.str());
        };
        std::string non_finite;
        const float lr = lr_at(c.schedule, s - 1);
        float grad_norm = std::nanf("");
        if (!std::isfinite(loss_sum)) {
          non_finite = "the loss is " + std::to_string(loss_sum / micro);
        } else {
          const auto h = hyper_values(c.optimizer, lr, s);
          upload(hyper, std::span<const float>(h));
          update.run();
          grad_norm = static_cast<const float*>(norm.mapped())[0];
          if (!std::isfinite(grad_norm)) non_finite = "the gradients' norm is " + std::to_string(grad_norm);
        }
        const bool skipped = !non_finite.empty();
        if (skipped) {
          if (c.on_non_finite == NonFinitePolicy::stop || consecutive_skips + 1 >= kMaxConsecutiveSkips)
            stop_non_finite(non_finite);
          ++consecutive_skips;
          ++result.skipped_steps;
          runs.add_event(run_id, store::kEventSkipped, s, "step " + std::to_string(s) + " skipped: " + non_finite);
        } else {
          consecutive_skips = 0;
          if (c.profile) add_timings(gpu_ms, update, "optimizer");
        }
        StepReport r{.run_id = run_id, .step = s, .total = total, .loss = loss_sum / micro, .lr = lr,
                     .grad_norm = grad_norm, .trained_tokens = tokens, .skipped = skipped, .skip_reason = non_finite,
                     .gpu_ms = std::move(gpu_ms)};
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        r.tokens_per_s = double(micro) * B * T / dt;
        r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
        const bool last = s == total;
        if (!skipped) {  // a skipped step has no metrics row: the loss curve goes from the step before to the next
          if (eval && ((c.val_every && s % c.val_every == 0) || last)) {
            r.val_loss = mean_loss(*eval, data.validation, B, T, pad);
            result.last_val_loss = r.val_loss;
          }
          runs.log_metrics(run_id, {.step = s, .time = store::unix_now(), .loss = r.loss, .val_loss = r.val_loss,
                                    .lr = r.lr, .grad_norm = r.grad_norm, .tokens_per_s = r.tokens_per_s, .gpu_ms = r.gpu_ms});
          if (!logged_any) result.first_loss = r.loss, logged_any = true;
          result.last_loss = r.loss;
        }
        runs.update_heartbeat(run_id);
        result.steps = s;
        bool go_on = on_step(r);
        if (control) {
          control->hold_while_paused({.held = [&] { runs.set_status(run_id, store::RunStatus::paused); },
                                      .keep_alive = [&] { runs.update_heartbeat(run_id); },
                                      .released = [&] { runs.set_status(run_id, store::RunStatus::running); }});
          go_on = go_on && !control->stop_requested();
        }
        const bool asked = control && control->take_checkpoint_request();
        if ((c.save_every && s % c.save_every == 0 && !last) || (asked && go_on)) checkpoint(s);
        if (!go_on) {
          checkpoint(s);
          result.stopped = true;
          break;
        }
      }
    } catch (const vk::DeviceLost& e) {
      // The device's memory went with it: the step's weights cannot be read back, so the latest checkpoint
      // (written by --save-every, or the one this run resumed from) is what there is to go on from.
      const auto saved = runs.checkpoints(run_id);
      std::string where = !saved.empty() ? saved.back().path.string() : c.resume.string();
      std::ostringstream msg;
      msg << "step " << at_step << " of " << total << ": " << e.what() << ". Its memory, with the weights of the steps "
          << "since the latest checkpoint, is gone; ";
      if (where.empty())
        msg << "no checkpoint was written (--save-every N writes one every N steps): train again";
      else
        msg << "the latest checkpoint is " << where << ": continue with --resume " << where;
      msg << " once the GPU works again (a driver reset, a reboot, or lower clocks or power)";
      throw Error(msg.str());
    }
    save_adapter();
    runs.set_status(run_id, result.stopped ? store::RunStatus::stopped : store::RunStatus::finished);
  } catch (const std::exception& e) {
    runs.set_status(run_id, store::RunStatus::failed, e.what());
    throw;
  }
  return result;
}

}  // namespace ls::train
