// Studio: evaluating a run's final adapter on the run's held-out validation examples, with the base model's
// replies beside (the Runs panel's Evaluate, shown in the Evaluate panel). The work runs on the evaluator
// thread: the held-out lines found as training found them (infer::held_out_records), the adapter loaded, each
// side's replies generated batched (infer::generate_replies, greedy), every reply sent to the UI as it comes,
// and the rows written to "<run folder>/eval-<stamp>.jsonl" (the format of `lorastudio generate --prompts
// --compare-base`).
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <string_view>

#include "model/peft_adapter.h"
#include "train/config_from_json.h"
#include "ui/studio.h"
#include "util/local_time.h"

namespace ls::ui {

namespace fs = std::filesystem;

void Studio::evaluate_run(int64_t id) {
  if (eval_.running) return fail("An evaluation is running", "Stop it in the Evaluate panel before starting another.");
  const store::RunInfo* run = runs_.find(id);
  if (!run) return;
  if (!model_.loaded) return fail("Evaluate", "Open the model the run was trained on (" + run->model_path.string() + ") first.");
  if (!trained_on(*run, model_.loaded->model.dir))
    return fail("This run does not fit the loaded model", run->name + " was trained on " + run->model_path.string() +
                                                               "; the loaded model is " + model_.loaded->model.dir.string() +
                                                               ". Open that model to evaluate its adapter.");
  const fs::path adapter = run->out_dir / "adapter";
  if (!fs::exists(adapter / "adapter_config.json"))
    return fail("Evaluate", run->name + " has no final adapter (" + adapter.string() + " is missing): it did not finish.");
  train::TrainConfig config;
  try {
    config = train::config_from_json(run->config_json, "run " + std::to_string(id), train_settings_.config);
  } catch (const std::exception& e) {
    return fail("The run's options cannot be read", e.what());
  }
  const auto& data = config.data_options;
  if (data.validation_file.empty() && !(data.validation_fraction > 0.0))
    return fail("The run has no validation examples",
                run->name + " held out no examples (its validation fraction was 0 and it had no validation file). Train "
                            "with a validation fraction (Train panel) or --val-fraction / --val-data to evaluate on "
                            "examples the adapter did not see.");
  const fs::path data_file = config.data.empty() ? run->data_path : config.data;
  fs::path out = run->out_dir / ("eval-" + local_stamp() + ".jsonl");
  for (int n = 2; fs::exists(out); ++n) out = run->out_dir / ("eval-" + local_stamp() + "-" + std::to_string(n) + ".jsonl");

  eval_ = EvalView{.running = true, .run = id, .run_name = run->name, .compared = eval_settings_.compare_base};
  for (Panel& p : panels_)
    if (std::string_view(p.key) == "eval") p.open = true;
  eval_stop_ = std::make_shared<std::atomic<bool>>(false);
  status_ = "Evaluating " + run->name + " on its held-out examples...";
  evaluator_->post([this, id, model = model_.loaded, data_file, data, adapter, out, settings = eval_settings_,
                    stop = eval_stop_] {
    try {
      const auto& files = model->files;
      const auto records = infer::held_out_records(data_file, files.tokenizer, files.chat, data);
      std::vector<infer::EvalPrompt> prompts;
      const fs::path file = data.validation_file.empty() ? data_file : data.validation_file;
      for (const auto& r : records)
        prompts.push_back(infer::eval_prompt(r, files, file.string() + ":" + std::to_string(r.line)));
      std::vector<infer::EvalRow> rows(prompts.size());
      size_t longest = 0;
      for (size_t i = 0; i < prompts.size(); ++i) {
        rows[i] = {.line = prompts[i].line, .prompt = prompts[i].shown, .reference = prompts[i].reference,
                   .prompt_tokens = uint32_t(prompts[i].ids.size())};
        longest = std::max(longest, prompts[i].ids.size());
      }
      events_.push(ev::EvalPrompts{id, rows, settings.compare_base});

      const auto& mc = model->model.config;
      const bool f16 = device_.report().float16 && device_.coopmat();
      const uint32_t context = mc.max_position_embeddings ? mc.max_position_embeddings : 4096;
      const infer::GeneratorOptions generator{.context = context, .act = f16 ? DType::f16 : DType::f32};
      const infer::GenerateOptions options{.max_new_tokens = settings.max_tokens, .sampling = {.temperature = 0},
                                           .stop_ids = files.eos};
      const auto lora = model::load_peft_adapter(device_, mc, adapter);
      std::string summary = std::to_string(prompts.size()) + " examples, greedy, up to " +
                            std::to_string(settings.max_tokens) + " new tokens";
      for (const ChatSide side : {kTuned, kBase}) {
        if (side == kBase && !settings.compare_base) continue;
        infer::EvalSideStats stats;
        auto replies = infer::generate_replies(
            device_, model->model, side == kTuned ? &lora : nullptr, files, generator, options, {}, prompts,
            settings.batch,
            [&](size_t i, const infer::EvalReply& r) { events_.push(ev::EvalReplied{side, i, r}); },
            [&] { return stop->load(); }, &stats);
        for (size_t i = 0; i < rows.size(); ++i) (side == kTuned ? rows[i].reply : rows[i].base) = std::move(replies[i]);
        char buf[160];
        std::snprintf(buf, sizeof buf, "; %s %.1f s (%u new tokens, %.0f tok/s)", side == kTuned ? "adapter" : "base",
                      stats.wall_seconds, stats.batch.new_tokens,
                      stats.wall_seconds > 0 ? stats.batch.new_tokens / stats.wall_seconds : 0.0);
        summary += buf;
      }
      infer::write_eval_jsonl(rows, settings.compare_base, out);
      events_.push(ev::EvalDone{out, summary});
    } catch (const infer::EvalCancelled&) {
      events_.push(ev::EvalFailed{"stopped"});
    } catch (const std::exception& e) {
      events_.push(ev::EvalFailed{e.what()});
    }
  });
}

}  // namespace ls::ui
