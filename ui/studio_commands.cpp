// Studio: the panels' commands (ui/views.h), and the work they hand to the workers.
#include <algorithm>
#include <system_error>

#include "demo/demo_model.h"
#include "model/gguf_folder.h"
#include "model/merge.h"
#include "model/peft_adapter.h"
#include "store/metrics_export.h"
#include "train/checkpoint.h"
#include "train/config_from_json.h"
#include "ui/loading.h"
#include "ui/overloaded.h"
#include "ui/studio.h"
#include "util/local_time.h"

namespace ls::ui {

namespace fs = std::filesystem;

void Studio::run(Command& command) {
  std::visit(Overloaded{
                 [&](cmd::OpenModel& c) { open_model(c.dir); },
                 [&](cmd::OpenData& c) { open_data(c.file); },
                 [&](cmd::StartTraining&) { start_training(); },
                 [&](cmd::ResumeRun& c) { resume_run(c.run); },
                 [&](cmd::PauseTraining&) { trainer_->pause(); },
                 [&](cmd::ResumeTraining&) { trainer_->resume(); },
                 [&](cmd::StopTraining&) {
                   trainer_->stop();
                   if (training()) train_.state = TrainState::stopping;
                 },
                 [&](cmd::CheckpointNow&) {
                   trainer_->checkpoint_now();
                   train_.checkpoint_asked = true;
                   status_ = "A checkpoint is written after the current step.";
                 },
                 [&](cmd::SendChat& c) { send_chat(c.text); },
                 [&](cmd::StopChat&) { chat_worker_->stop(); },
                 [&](cmd::ClearChat&) {
                   chat_worker_->stop();
                   chat_worker_->reset();
                   chat_.turns.clear();
                   chat_.generating = false;
                   panel_states_.chat.seen_turns = 0;
                   store_worker_->post([this] { store_.new_chat(); });
                 },
                 [&](cmd::OpenChat& c) {  // the conversation shown once the store thread has read it
                   chat_worker_->stop();
                   chat_worker_->reset();
                   chat_.generating = false;
                   store_worker_->post([this, id = c.id] { store_.open_chat(id); });
                 },
                 [&](cmd::UseAdapter& c) {
                   // A run's adapter fits only the model it was trained on (the Runs panel offers every run).
                   if (const store::RunInfo* r = runs_.owner_of(c.dir);
                       !c.dir.empty() && r && model_.loaded && !trained_on(*r, model_.loaded->model.dir)) {
                     fail("This adapter does not fit the loaded model",
                          r->name + " was trained on " + r->model_path.string() + "; the loaded model is " +
                              model_.loaded->model.dir.string() + ". Open that model to chat with its adapter.");
                     return;
                   }
                   chat_.adapter = c.dir;
                   chat_.adapter_label = c.dir.empty() ? "" : c.label.empty() ? c.dir.filename().string() : c.label;
                   if (!c.dir.empty()) chat_settings_.use_adapter = true;
                   if (!c.dir.empty()) status_ = "Chat uses the adapter in " + c.dir.string();
                 },
                 [&](cmd::ShowRun& c) { runs_.shown = c.run; },
                 [&](cmd::OverlayRun& c) { runs_.overlay = c.run; },
                 [&](cmd::ExportAdapter& c) { export_adapter(c.run, c.dir, c.format); },
                 [&](cmd::Browse& c) {
                   browsing_ = c;
                   switch (c.purpose) {
                     case cmd::BrowseFor::model:
                       browser_.open("Open a model folder", FileBrowser::Pick::folder,
                                     model_.loaded ? model_.loaded->model.dir.parent_path() : fs::path());
                       break;
                     case cmd::BrowseFor::data:
                       browser_.open("Open a JSONL data file", FileBrowser::Pick::file,
                                     data_.loaded ? data_.path : fs::path(), ".jsonl");
                       break;
                     case cmd::BrowseFor::export_adapter:
                     case cmd::BrowseFor::export_merged:
                     case cmd::BrowseFor::export_gguf: {
                       const auto* r = runs_.find(c.run);
                       const char* prefix = c.purpose == cmd::BrowseFor::export_merged ? "merged-"
                                            : c.purpose == cmd::BrowseFor::export_gguf  ? "gguf-"
                                                                                        : "export-peft-";
                       const char* title = c.purpose == cmd::BrowseFor::export_merged
                                               ? "Write the merged model to a new folder"
                                           : c.purpose == cmd::BrowseFor::export_gguf
                                               ? "Write the GGUF files for llama.cpp and Ollama to a new folder"
                                               : "Export the adapter to a new folder";
                       const fs::path start = r && !r->out_dir.empty() ? r->out_dir / (prefix + local_stamp()) : fs::path();
                       browser_.open(title, FileBrowser::Pick::new_folder, start);
                       break;
                     }
                   }
                 },
                 [&](cmd::ExportChart& c) { export_chart(c.png); },
                 [&](cmd::Status& c) { status_ = c.text; },
                 [&](cmd::Failure& c) { fail(c.title, c.message); },
                 [&](cmd::TryDemo&) { try_demo(); },
                 [&](cmd::EvaluateRun& c) { evaluate_run(c.run); },
                 [&](cmd::StopEvaluation&) {
                   if (eval_stop_) *eval_stop_ = true;
                 },
             },
             command);
}

void Studio::fail(std::string title, std::string message) {
  error_log_.push_back(title + ": " + message);
  errors_.push_back({std::move(title), std::move(message)});
}

void Studio::open_model(const fs::path& dir) {
  if (model_.loading) {  // e.g. a folder dropped while the last session's model opens: it opens next
    if (dir != model_.loading_dir) {
      model_wanted_ = dir;
      status_ = dir.filename().string() + " opens once " + model_.loading_dir.filename().string() + " has loaded.";
    }
    return;
  }
  model_.loading = true;
  model_.loading_dir = dir;
  loader_->post([this, dir, quant = train_settings_.config.quantize] {
    try {
      events_.push(ev::ModelLoaded{load_model(device_, dir, quant)});
    } catch (const std::exception& e) {
      events_.push(ev::ModelFailed{dir, e.what()});
    }
  });
}

void Studio::open_data(const fs::path& file) {
  // The demo's held-out split is no validation data for other data sets.
  auto& val = train_settings_.config.data_options.validation_file;
  const demo::DemoData& demo = demo_.data();
  if (!demo.validation.empty() && val == demo.validation && file != demo.train) val.clear();
  if (!model_.loaded) {
    data_wanted_ = file;
    status_ = "The data is read once a model is open (its tokenizer counts the tokens).";
    return;
  }
  data_.loading = true;
  data_.path = file;
  auto options = train_settings_.config.data_options;
  options.validation_fraction = train_settings_.val_fraction;
  options.skip_bad_lines = true;  // list every problem
  options.pack = false;
  loader_->post([this, file, options, model = model_.loaded] {
    try {
      events_.push(ev::DataLoaded{read_data(file, *model, options)});
    } catch (const std::exception& e) {
      events_.push(ev::DataFailed{file, e.what()});
    }
  });
}

void Studio::start_training(std::string name) {
  if (training() || trainer_->active()) return;
  if (!model_.loaded || !data_.loaded) return fail("Training cannot start", "Open a model and a data file first.");
  train::TrainConfig c = train_settings_.config;
  c.model = model_.loaded->model.dir;
  c.data = data_.path;
  c.store = options_.store;
  c.targets.clear();
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)
    if (train_settings_.targets[i]) c.targets.push_back(model::LoraTarget(i));
  c.schedule.kind = train::ScheduleOptions::Kind(train_settings_.schedule);
  c.data_options.validation_fraction = train_settings_.val_fraction;
  c.data_options.seed = c.seed;
  if (name.empty()) name = train_settings_.run_name.empty() ? "run-" + local_stamp() : train_settings_.run_name;
  fs::path out = options_.runs_dir / name;
  std::error_code ec;
  for (int n = 2; fs::exists(out, ec); ++n) out = options_.runs_dir / (name + "-" + std::to_string(n));
  c.out = out;
  try {
    train::validate(c);
  } catch (const std::exception& e) {
    return fail("Training cannot start", e.what());
  }
  launch_training(c);
}

void Studio::resume_run(int64_t id) {
  if (training() || trainer_->active()) return fail("Training is running", "Stop the current run before resuming another.");
  const store::RunInfo* run = runs_.find(id);
  if (!run) return;
  train::TrainConfig c;
  try {
    c = train::config_from_json(run->config_json, "run " + std::to_string(id), train_settings_.config);
  } catch (const std::exception& e) {
    return fail("The run cannot be resumed", e.what());
  }
  c.out = run->out_dir;
  c.store = options_.store;
  c.profile = false;
  const auto checkpoint = train::latest_checkpoint_in(run->out_dir);
  if (!checkpoint)
    return fail("The run cannot be resumed", run->out_dir.string() + " holds no complete checkpoint-N folder.");
  c.resume = *checkpoint;
  try {
    train::validate(c);
  } catch (const std::exception& e) {
    return fail("The run cannot be resumed", e.what());
  }
  launch_training(c);
}

void Studio::launch_training(const train::TrainConfig& c) {
  const fs::path out = c.out;
  train_ = TrainView{.state = TrainState::starting, .total = c.steps, .out_dir = out};
  const bool started = trainer_->start(
      device_, c,
      TrainWorker::Callbacks{
          .on_step = [this](const train::StepReport& r) { events_.push(ev::TrainStep{r}); },
          .on_paused = [this](bool paused) { events_.push(ev::TrainPaused{paused}); },
          .on_done = [this](const train::TrainResult& r) { events_.push(ev::TrainDone{r}); },
          .on_failed = [this](const std::string& e) { events_.push(ev::TrainFailed{e}); }});
  if (!started) train_.state = TrainState::idle;
  status_ = (c.resume.empty() ? "Training started: " : "Training resumed from " + c.resume.string() + ": ") + out.string();
}

void Studio::try_demo() {
  if (demo_.active()) return;
  if (model_.loading) return fail("A model is loading", "Wait until " + model_.loading_dir.string() + " is loaded.");
  if (training()) return fail("Training is running", "The demo starts a training run: stop the current one first.");
  fs::path root;
  try {
    root = demo::default_data_root();
  } catch (const std::exception& e) {
    return fail("The demo cannot start", e.what());
  }
  demo_.making();
  model_.loading = true;
  model_.loading_dir = root / demo::kDemoModelFolder;
  status_ = "Looking for the demo model in " + model_.loading_dir.string() + " ...";
  loader_->post([this, root] { make_demo(root, events_); });
}

// Called every frame while the demo has steps left.
void Studio::advance_demo() {
  switch (demo_.advance(model_, data_, train_, training())) {
    case DemoFlow::Next::wait: break;
    case DemoFlow::Next::open_data: open_data(demo_.data().train); break;
    case DemoFlow::Next::start_training:
      start_training("demo-" + local_stamp());
      if (!training()) demo_.cancel();
      break;
    case DemoFlow::Next::chat: {
      Command use = cmd::UseAdapter{train_.adapter_dir, train_.out_dir.filename().string() + " (final)"};
      run(use);
      const auto prompts = demo::demo_prompts(1);
      if (!prompts.empty()) send_chat(prompts[0].question);
      status_ = "Demo: the base model and the adapter answer a question the training data did not have. The demo "
                "model is tiny and random: for real work open a real model (e.g. Qwen2.5-0.5B-Instruct).";
      break;
    }
  }
}

void Studio::show_chat(const store::ChatInfo& chat, const std::vector<store::ChatMessage>& messages) {
  const fs::path adapter = chat.adapter_path.value_or(fs::path());
  std::string label = adapter.filename().string();
  const store::RunInfo* owner = adapter.empty() ? nullptr : runs_.owner_of(adapter);
  if (owner) label = owner->name + (adapter.filename() == "adapter" ? " (final)" : " " + adapter.filename().string());
  chat_.turns.clear();
  panel_states_.chat.seen_turns = 0;
  chat_.chat_id = chat.id;
  for (const store::ChatMessage& m : messages) {
    if (m.role == "user") {
      chat_.turns.push_back({.user = m.content});
      continue;
    }
    if (chat_.turns.empty() || !m.role.starts_with("assistant")) continue;  // a system prompt
    // "assistant (base model)": the base's side of a side-by-side turn; "assistant": the adapter's, if any.
    const ChatSide side = m.role == "assistant (base model)" || adapter.empty() ? kBase : kTuned;
    ChatReply& r = chat_.turns.back().reply[side];
    r = {.wanted = true, .text = m.content, .answered_by = side == kBase ? "base model" : label};
  }
  const bool fits = !adapter.empty() && fs::exists(adapter) &&
                    (!owner || (model_.loaded && trained_on(*owner, model_.loaded->model.dir)));
  if (fits) {
    chat_.adapter = adapter;
    chat_.adapter_label = label;
  }
  status_ = "Chat \"" + chat.title + "\" (" + std::to_string(chat_.turns.size()) +
            " turns) opened; new messages are added to it.";
}

void Studio::send_chat(const std::string& text) {
  if (!model_.loaded) return fail("Chat", "Open a model first.");
  if (chat_.generating) return;
  const auto& st = chat_settings_;
  infer::GenerateOptions options{.max_new_tokens = st.max_tokens, .sampling = st.sampling,
                                 .stop_ids = model_.loaded->files.eos};
  try {
    infer::validate(options.sampling);
  } catch (const std::exception& e) {
    return fail("Chat", e.what());
  }
  const bool tuned = !chat_.adapter.empty();
  const bool both = st.side_by_side && tuned;
  ChatTurn turn{.user = text};
  turn.reply[kTuned].wanted = both || (st.use_adapter && tuned);
  turn.reply[kBase].wanted = both || !turn.reply[kTuned].wanted;
  turn.reply[kBase].answered_by = "base model";
  turn.reply[kTuned].answered_by = chat_.adapter_label;  // a later choice of adapter does not relabel it
  ChatWorker::Request req{.model = model_.loaded, .adapter = tuned ? chat_.adapter : fs::path(), .options = options,
                          .turn = chat_.turns.size()};
  for (int side : {kBase, kTuned}) {
    req.wanted[side] = turn.reply[side].wanted;
    turn.reply[side].streaming = turn.reply[side].wanted;
    auto& m = req.messages[side];
    if (!st.system.empty()) m.push_back({"system", st.system});
    for (const auto& t : chat_.turns) {  // each side's own answers; the other side's where it did not answer
      const auto& r = t.reply[side].wanted ? t.reply[side] : t.reply[1 - side];
      if (r.text.empty()) continue;
      m.push_back({"user", t.user});
      m.push_back({"assistant", r.text});
    }
    m.push_back({"user", text});
  }
  chat_.turns.push_back(std::move(turn));
  chat_.generating = true;
  chat_worker_->send(std::move(req));
  const auto adapter = tuned ? std::optional<fs::path>(chat_.adapter) : std::nullopt;
  const auto run = train_.run_id && chat_.adapter == train_.adapter_dir ? std::optional<int64_t>(train_.run_id) : std::nullopt;
  store_worker_->post([this, text, adapter, run] { store_.add_user_message(text, adapter, run); });
}

void Studio::export_adapter(int64_t run, const fs::path& dir, store::ExportFormat format,
                            model::GgufFileType gguf_type) {
  const auto* r = runs_.find(run);
  if (!r) return;
  const fs::path source = r->out_dir / "adapter";
  const fs::path model_dir = r->model_path;
  const std::string n = std::to_string(run);
  status_ = format == store::ExportFormat::merged ? "Merging the adapter of run " + n + " ..."
            : format == store::ExportFormat::gguf ? "Writing the GGUF files of run " + n + " ..."
                                                  : "Exporting the adapter of run " + n + " ...";
  loader_->post([this, run, n, source, model_dir, dir, format, gguf_type] {
    try {
      std::string what;
      switch (format) {
        case store::ExportFormat::merged: {  // CPU work on mapped files (model/merge.h)
          const auto report = model::merge_adapter(model_dir, source, dir);
          what = "Merged model of run " + n + " written to " + dir.string() + " (" + std::to_string(report.merged) +
                 " matrices merged, " + std::to_string(report.shards) + " weight file" + (report.shards == 1 ? "" : "s") +
                 ").";
          break;
        }
        case store::ExportFormat::gguf: {  // the type the Runs panel chose (f16 unless changed)
          const auto files = model::export_gguf_folder(model_dir, source, dir, gguf_type);
          what = "GGUF files of run " + n + " written to " + dir.string() + " (" + files.model.filename().string() +
                 ", adapter.gguf; for Ollama: ollama create NAME -f " + files.modelfile.string() + ").";
          for (const auto& note : files.notes) what += " Note: " + note + ".";
          break;
        }
        case store::ExportFormat::peft: {
          const auto config = model::load_config(model_dir);
          const auto adapter = model::load_peft_adapter(device_, config, source);
          model::save_peft_adapter(adapter, config, dir, model_dir.string());
          what = "Adapter of run " + n + " written to " + dir.string() + " (PEFT).";
          break;
        }
      }
      store_worker_->post([this, run, dir, format] { store_.add_export(run, dir, format); });
      events_.push(ev::Status{what});
    } catch (const std::exception& e) {
      events_.push(ev::Failure{format == store::ExportFormat::merged ? "The merged model cannot be written"
                               : format == store::ExportFormat::gguf ? "The GGUF files cannot be written"
                                                                     : "The adapter cannot be exported",
                               e.what()});
    }
  });
}

void Studio::export_chart(bool png) {
  if (!runs_.shown) return;
  const auto* r = runs_.find(*runs_.shown);
  const fs::path dir = (r && !r->out_dir.empty() ? r->out_dir : options_.runs_dir) / "charts";
  auto series = loss_series(runs_, *runs_.shown);
  if (runs_.overlay)
    for (auto& s : loss_series(runs_, *runs_.overlay, (" (run " + std::to_string(*runs_.overlay) + ")").c_str()))
      series.push_back(std::move(s));
  std::vector<store::MetricRow> rows;
  if (auto it = runs_.metrics.find(*runs_.shown); it != runs_.metrics.end()) rows = it->second;
  const ChartView view = panel_states_.charts.loss;
  loader_->post([this, png, dir, series = std::move(series), rows = std::move(rows), view] {
    try {
      fs::create_directories(dir);
      const fs::path file = dir / (png ? "loss.png" : "metrics.csv");
      if (png) write_chart_png(file, series, view, 1200, 700);
      else store::write_metrics_csv(file, rows);
      events_.push(ev::Status{std::string(png ? "Loss chart" : "Metrics") + " written to " + file.string()});
    } catch (const std::exception& e) {
      events_.push(ev::Failure{"The chart cannot be saved", e.what()});
    }
  });
}

void Studio::drop(const std::vector<fs::path>& paths) {
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec) && fs::exists(p / "config.json", ec)) {
      open_model(p);
    } else if (fs::is_directory(p, ec) && fs::exists(p / "adapter_config.json", ec)) {
      Command c = cmd::UseAdapter{p, p.filename().string()};
      run(c);
    } else if (fs::is_regular_file(p, ec) && (p.extension() == ".jsonl" || p.extension() == ".json")) {
      open_data(p);
    } else {
      fail("Nothing to open", p.string() + " is neither a model folder (config.json), an adapter folder "
                                           "(adapter_config.json) nor a JSONL file.");
    }
  }
}

}  // namespace ls::ui
