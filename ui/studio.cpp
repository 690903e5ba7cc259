// Index of this file:
// [SECTION] Construction and the workers
// [SECTION] Frame
// [SECTION] Events (workers -> UI)
// [SECTION] Commands (panels -> workers)
// [SECTION] Menu, status bar, dialogs
// [SECTION] Run store thread
#include "ui/studio.h"

#include <algorithm>
#include <system_error>

#include <imgui.h>

#include "demo/demo_data.h"
#include "demo/demo_model.h"
#include "error.h"
#include "model/merge.h"
#include "model/peft_adapter.h"
#include "store/metrics_export.h"
#include "train/checkpoint.h"
#include "train/config_from_json.h"
#include "train/dataset.h"
#include "ui/settings.h"
#include "ui/store_path.h"
#include "ui/widgets.h"
#include "util/atomic_file.h"
#include "util/local_time.h"

namespace ls::ui {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

constexpr size_t kPreviewExamples = 6;
constexpr auto kPollPeriod = std::chrono::milliseconds(500);
constexpr double kStaleAfterS = 300;  // a running run without a heartbeat for this long was interrupted

// Parameters, bytes and dtype of a model's weights: the tensors of its table (model/architecture.h).
void measure(LoadedModel& m) {
  const std::vector<model::ExpectedTensor> table = model::expected_tensors(m.model.config);
  for (const model::ExpectedTensor& e : table) {
    const Tensor& t = model::weight_of(m.model.weights, e);
    m.parameters += t.numel();
    m.weight_bytes += t.bytes();
  }
  const std::string d = dtype_name(m.model.weights.embed.dtype());
  m.dtype = d;
  for (const model::ExpectedTensor& e : table) {
    const Tensor& t = model::weight_of(m.model.weights, e);
    if (t.numel() > 4096 && dtype_name(t.dtype()) != d) m.dtype = "mixed";
  }
}

// The example as pieces of text, each trained or not.
PreviewExample preview_of(const train::Example& ex, const tok::Tokenizer& tokenizer) {
  PreviewExample p{.line = ex.line, .tokens = ex.ids.size(), .trained = train::trained_count(ex)};
  size_t i = 0;
  while (i < ex.ids.size()) {
    size_t j = i;
    while (j < ex.ids.size() && ex.trained[j] == ex.trained[i]) ++j;
    p.pieces.push_back({tokenizer.decode(std::span(ex.ids).subspan(i, j - i)), ex.trained[i] != 0});
    i = j;
  }
  return p;
}

// Bytes of the adapter, its gradients and two AdamW moments that training `config` holds.
uint64_t training_lora_bytes(const model::ModelConfig& mc, const train::TrainConfig& c) {
  uint64_t per_layer = 0;
  for (auto t : c.targets) {
    auto [out, in] = model::target_shape(mc, t);
    per_layer += uint64_t(c.rank) * (uint64_t(in) + out) * 4;
  }
  return 4 * per_layer * mc.num_layers;
}

}  // namespace

// [SECTION] Construction and the workers

Studio::Studio(vk::Device& device, StudioOptions options) : device_(device), options_(std::move(options)) {
  options_.store = store_path_or_default(options_.store);
  if (options_.runs_dir.empty()) options_.runs_dir = options_.store.parent_path() / "runs";
  // Settings first, on this thread, before any worker touches the store.
  UiSettings settings;
  try {
    db_.emplace(options_.store);
    db_->mark_stale_runs(store::unix_now(), kStaleAfterS);
    if (auto text = db_->setting(kSettingsKey)) read_settings(*text, settings);
  } catch (const std::exception& e) {
    fail("The run store cannot be opened", e.what());
    db_.reset();
  }
  train_settings_ = settings.train;
  chat_settings_ = settings.chat;
  set_open_flags(panels_, settings.panels);
  settings.panels = open_flags(panels_);  // every panel's flag, as save_settings writes them
  saved_settings_ = settings_json(settings);

  auto on_error = [this](const std::string& e) { events_.push(ev::Failure{"Unexpected error", e}); };
  store_worker_ = std::make_unique<Worker>(on_error, kPollPeriod, [this] { poll_store(); });
  loader_ = std::make_unique<Worker>(on_error);
  chat_worker_ = std::make_unique<ChatWorker>(
      device_, ChatWorker::Callbacks{
                   .on_piece = [this](size_t t, ChatSide s, const std::string& p) { events_.push(ev::ChatPiece{t, s, p}); },
                   .on_done = [this](size_t t, ChatSide s, const infer::Reply& r) { events_.push(ev::ChatDone{t, s, r}); },
                   .on_failed = [this](size_t t, ChatSide s, const std::string& e) { events_.push(ev::ChatFailed{t, s, e}); },
                   .on_memory = [this](uint64_t kv, uint64_t lora) { events_.push(ev::ChatMemory{kv, lora}); }});
  trainer_ = std::make_unique<TrainWorker>();
  status_ = "Device: " + device_.report().name + ". Open a model folder to begin.";
  if (!settings.model.empty() && fs::is_directory(settings.model / "") && fs::exists(settings.model / "config.json")) {
    open_model(settings.model);
    if (!settings.data.empty() && fs::exists(settings.data)) data_wanted_ = settings.data;
  }
}

Studio::~Studio() {
  if (trainer_ && trainer_->active()) trainer_->stop();
  trainer_.reset();  // joins: the run writes its checkpoint and adapter
  chat_worker_.reset();
  loader_.reset();
  store_worker_.reset();
  save_settings(true);
}

bool Studio::training() const {
  return train_.state == TrainState::starting || train_.state == TrainState::running ||
         train_.state == TrainState::paused || train_.state == TrainState::stopping;
}

StudioState Studio::state() const {
  StudioState s;
  s.model_loaded = model_.loaded != nullptr;
  s.model_loading = model_.loading;
  s.data_loaded = data_.loaded;
  s.data_loading = data_.loading;
  s.train = train_.state;
  s.step = train_.step;
  s.total = train_.total;
  s.run_id = train_.run_id;
  s.chat_generating = chat_.generating;
  s.chat_turns = chat_.turns.size();
  s.chat_tokens = chat_.tokens_total;
  if (!chat_.turns.empty())
    for (int side : {kBase, kTuned}) s.last_reply[side] = chat_.turns.back().reply[side].text;
  s.loss_points = panel_states_.charts.loss_points;
  s.gpu_groups = panel_states_.gpu.groups_shown;
  s.browser_open = browser_.is_open();
  s.dialog_open = !errors_.empty();
  s.errors = error_log_;
  s.frames = frame_stats_;
  for (const auto& r : runs_.runs) {
    const auto m = runs_.metrics.find(r.id);
    s.runs.push_back({r.id, r.name, store::run_status_name(r.status), m == runs_.metrics.end() ? 0 : m->second.size()});
  }
  return s;
}

void Studio::note_frame(double ms, double cpu_wait_ms, bool drawn, bool up_to_date) {
  auto& f = frame_stats_;
  const auto now = Clock::now();
  ++f.frames;
  f.drawn += drawn;
  f.up_to_date += up_to_date;
  const bool busy = train_.state == TrainState::running || train_.state == TrainState::starting;
  if (busy) {
    ++f.training_frames;
    f.training_drawn += drawn;
    f.training_up_to_date += up_to_date;
    if (ms > f.max_frame_ms) f.max_frame_ms = ms, f.max_frame_cpu_wait_ms = cpu_wait_ms;
    f.max_frame_ms_on_cpu = std::max(f.max_frame_ms_on_cpu, ms - cpu_wait_ms);
    if (!up_to_date && last_up_to_date_ != Clock::time_point{})
      f.max_stale_ms = std::max(f.max_stale_ms, std::chrono::duration<double, std::milli>(now - last_up_to_date_).count());
  }
  if (up_to_date) last_up_to_date_ = now;
  rate_draws_ += drawn;
  const double window = std::chrono::duration<double>(now - rate_since_).count();
  if (window >= 1.0) {
    f.draws_per_s = rate_since_ == Clock::time_point{} ? 0 : double(rate_draws_) / window;
    rate_since_ = now;
    rate_draws_ = 0;
  }
}

// [SECTION] Frame

void Studio::frame() {
  for (auto& e : events_.drain()) apply(e);
  if (!data_wanted_.empty() && model_.loaded && !model_.loading) {
    open_data(data_wanted_);
    data_wanted_.clear();
  }
  if (demo_step_ != DemoStep::none) advance_demo();
  if (Clock::now() - last_memory_ > std::chrono::milliseconds(500)) refresh_memory();

  draw_menu();
  const std::vector<WindowPlace> places = layout_.places(panels_);
  PanelContext ctx{.model = model_, .data = data_, .train = train_, .runs = runs_, .chat = chat_, .memory = memory_,
                   .train_settings = train_settings_, .chat_settings = chat_settings_, .state = panel_states_, .io = io_};
  for (size_t i = 0; i < panels_.size(); ++i) {
    Panel& p = panels_[i];
    if (!p.open) continue;
    place_window(places[i]);  // applies to the panel's Begin
    p.draw(ctx, p.title, &p.open);
  }
  draw_status_bar();
  draw_browser();
  draw_error_dialog();

  for (auto& c : io_.take_commands()) run(c);
  save_settings(false);
}

void Studio::refresh_memory() {
  last_memory_ = Clock::now();
  const auto& stats = memory_stats_;
  memory_.device_local = device_.report().device_local_bytes;
  memory_.used = stats.used_bytes;
  memory_.reserved = stats.block_bytes;
  memory_.weights = model_.loaded ? model_.loaded->weight_bytes : 0;
  memory_.lora = chat_lora_bytes_;
  memory_.kv_cache = chat_kv_bytes_;
  // The trainer loads its own copy of the model and holds the adapter, its gradients and two moments.
  if (training() && train_.state != TrainState::starting && model_.loaded) {
    memory_.weights += model_.loaded->weight_bytes;
    memory_.lora += training_lora_bytes(model_.loaded->model.config, train_settings_.config);
  }
}

void Studio::save_settings(bool now) {
  if (!now && Clock::now() - last_settings_ < std::chrono::seconds(1)) return;
  last_settings_ = Clock::now();
  UiSettings s{.train = train_settings_, .chat = chat_settings_,
               .model = model_.loaded ? model_.loaded->model.dir : fs::path(),
               .data = data_.loaded ? data_.path : data_wanted_,
               .panels = open_flags(panels_)};
  std::string text = settings_json(s);
  if (text == saved_settings_) return;
  saved_settings_ = text;
  if (now) {  // the workers are gone: this thread owns the store
    try {
      if (db_) db_->set_setting(kSettingsKey, text);
    } catch (const std::exception&) {
    }
    return;
  }
  store_worker_->post([this, text] {
    if (db_) db_->set_setting(kSettingsKey, text);
  });
}

// [SECTION] Events (workers -> UI)

void Studio::apply(Event& event) {
  std::visit(
      Overloaded{
          [&](ev::ModelLoaded& e) {
            model_.loading = false;
            if (data_.loaded && data_.model_dir != e.model->model.dir) data_wanted_ = data_.path;  // recount
            model_.loaded = std::move(e.model);
            chat_worker_->reset(true);
            status_ = "Model " + model_.loaded->model.dir.filename().string() + " loaded: " +
                      format_count(model_.loaded->parameters) + " parameters.";
          },
          [&](ev::ModelFailed& e) {
            model_.loading = false;
            fail("The model cannot be opened", e.error);
          },
          [&](ev::DataLoaded& e) {
            data_ = std::move(e.data);
            status_ = "Data " + data_.path.filename().string() + ": " + format_count(data_.examples) + " examples.";
          },
          [&](ev::DataFailed& e) {
            data_.loading = false;
            fail("The data file cannot be read", e.error);
          },
          [&](ev::TrainStep& e) {
            const auto& r = e.report;
            if (train_.state == TrainState::starting) train_.state = TrainState::running;
            if (train_.run_id != r.run_id) runs_.shown = r.run_id;  // a new run: chart it
            train_.run_id = r.run_id;
            train_.step = r.step;
            train_.total = r.total;
            train_.loss = r.loss;
            train_.lr = r.lr;
            train_.grad_norm = r.grad_norm;
            train_.tokens_per_s = r.tokens_per_s;
            train_.elapsed_s = r.elapsed_s;
            if (r.val_loss) train_.val_loss = r.val_loss;
            train_.checkpoint_asked = false;
            merge_metrics(r.run_id, {{.step = r.step, .time = store::unix_now(), .loss = r.loss, .val_loss = r.val_loss,
                                      .lr = r.lr, .grad_norm = r.grad_norm, .tokens_per_s = r.tokens_per_s,
                                      .gpu_ms = r.gpu_ms}});
          },
          [&](ev::TrainPaused& e) {
            if (train_.state == TrainState::stopping) return;
            train_.state = e.paused ? TrainState::paused : TrainState::running;
          },
          [&](ev::TrainDone& e) {
            train_.state = e.result.stopped ? TrainState::stopped : TrainState::finished;
            train_.adapter_dir = e.result.adapter_dir;
            train_.run_id = e.result.run_id;
            status_ = std::string(e.result.stopped ? "Training stopped" : "Training finished") + " after " +
                      std::to_string(e.result.steps) + " steps; adapter written to " + e.result.adapter_dir.string();
            if (chat_.adapter.empty() || chat_.adapter == e.result.adapter_dir) {
              chat_.adapter = e.result.adapter_dir;
              chat_.adapter_label = train_.out_dir.filename().string() + " (final)";
              chat_settings_.use_adapter = true;
            }
          },
          [&](ev::TrainFailed& e) {
            train_.state = TrainState::failed;
            train_.error = e.error;
            fail("Training failed", e.error);
          },
          [&](ev::ChatPiece& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.text += e.text;
            ++r.tokens;
            ++chat_.tokens_total;
          },
          [&](ev::ChatDone& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.streaming = false;
            r.text = e.reply.text;
            char buf[160];
            std::snprintf(buf, sizeof buf, "%u tokens, %.1f tok/s (prefill %u: %.0f tok/s), stop: %s%s",
                          e.reply.stats.new_tokens, e.reply.stats.decode_tokens_per_second(), e.reply.stats.prompt_tokens,
                          e.reply.stats.prefill_tokens_per_second(), e.reply.stats.stop_reason.c_str(),
                          e.reply.history_dropped ? " (context full: earlier turns dropped)" : "");
            r.stats = buf;
            const auto& turn = chat_.turns[e.turn];
            const bool both = turn.reply[kBase].wanted && turn.reply[kTuned].wanted;
            const std::string role = both && e.side == kBase ? "assistant (base model)" : "assistant";
            store_worker_->post([this, role, text = e.reply.text] {
              if (db_ && chat_id_) db_->add_chat_message(chat_id_, {role, text});
            });
          },
          [&](ev::ChatFailed& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.streaming = false;
            r.error = e.error == "stopped" ? "" : e.error;
            if (e.error == "stopped") r.stats = "stopped";
          },
          [&](ev::ChatMemory& e) {
            chat_kv_bytes_ = e.kv_bytes;
            chat_lora_bytes_ = e.lora_bytes;
          },
          [&](ev::RunsListed& e) {
            runs_.runs = std::move(e.runs);
            if (!runs_.shown && !runs_.runs.empty()) runs_.shown = runs_.runs.front().id;
          },
          [&](ev::RunMetrics& e) {
            if (e.replace) runs_.metrics[e.run].clear();
            merge_metrics(e.run, std::move(e.rows));
          },
          [&](ev::RunCheckpoints& e) { runs_.checkpoints[e.run] = std::move(e.checkpoints); },
          [&](ev::DeviceMemory& e) { memory_stats_ = e.stats; },
          [&](ev::Status& e) { status_ = std::move(e.text); },
          [&](ev::Failure& e) { fail(std::move(e.title), std::move(e.message)); },
          [&](ev::DemoReady& e) {
            model_.loading = false;
            demo_model_dir_ = e.model_dir;
            demo_data_ = e.data;
            // The demo's options, as the Train and Chat panels show them: a few minutes on a CPU.
            const auto c = demo::demo_train_config(e.model_dir, e.data, demo::kDemoSteps);
            train_settings_.config = c;
            for (size_t i = 0; i < model::kLoraTargetCount; ++i) train_settings_.targets[i] = false;
            for (auto t : c.targets) train_settings_.targets[size_t(t)] = true;
            train_settings_.schedule = int(c.schedule.kind);
            train_settings_.val_fraction = 0;
            chat_settings_.side_by_side = true;
            chat_settings_.sampling.temperature = 0;  // greedy: the most likely answer of each side
            chat_settings_.max_tokens = 48;
            demo_step_ = DemoStep::opening;
            demo_data_asked_ = false;
            open_model(e.model_dir);
          },
      },
      event);
  if (!chat_.turns.empty()) {
    const auto& last = chat_.turns.back();
    chat_.generating = last.reply[kBase].streaming || last.reply[kTuned].streaming;
  }
}

void Studio::merge_metrics(int64_t run, std::vector<store::MetricRow> rows) {
  auto& have = runs_.metrics[run];
  for (auto& r : rows) {
    auto it = std::lower_bound(have.begin(), have.end(), r.step, [](const store::MetricRow& a, int64_t s) { return a.step < s; });
    if (it != have.end() && it->step == r.step) {
      if (!r.val_loss) r.val_loss = it->val_loss;
      if (r.gpu_ms.empty()) r.gpu_ms = it->gpu_ms;
      *it = std::move(r);
    } else {
      have.insert(it, std::move(r));
    }
  }
}

// [SECTION] Commands (panels -> workers)

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
                   store_worker_->post([this] { chat_id_ = 0; });
                 },
                 [&](cmd::UseAdapter& c) {
                   chat_.adapter = c.dir;
                   chat_.adapter_label = c.dir.empty() ? "" : c.label.empty() ? c.dir.filename().string() : c.label;
                   if (!c.dir.empty()) chat_settings_.use_adapter = true;
                   if (!c.dir.empty()) status_ = "Chat uses the adapter in " + c.dir.string();
                 },
                 [&](cmd::ShowRun& c) { runs_.shown = c.run; },
                 [&](cmd::OverlayRun& c) { runs_.overlay = c.run; },
                 [&](cmd::ExportAdapter& c) { export_adapter(c.run, c.dir, c.merged); },
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
                     case cmd::BrowseFor::export_merged: {
                       const bool merged = c.purpose == cmd::BrowseFor::export_merged;
                       const auto* r = runs_.find(c.run);
                       const fs::path start =
                           r && !r->out_dir.empty() ? r->out_dir / ((merged ? "merged-" : "export-peft-") + local_stamp())
                                                    : fs::path();
                       browser_.open(merged ? "Write the merged model to a new folder" : "Export the adapter to a new folder",
                                     FileBrowser::Pick::new_folder, start);
                       break;
                     }
                   }
                 },
                 [&](cmd::ExportChart& c) { export_chart(c.png); },
                 [&](cmd::Status& c) { status_ = c.text; },
                 [&](cmd::Failure& c) { fail(c.title, c.message); },
                 [&](cmd::TryDemo&) { try_demo(); },
             },
             command);
}

void Studio::fail(std::string title, std::string message) {
  error_log_.push_back(title + ": " + message);
  errors_.push_back({std::move(title), std::move(message)});
}

void Studio::open_model(const fs::path& dir) {
  if (model_.loading) return fail("A model is loading", "Wait until " + model_.loading_dir.string() + " is loaded.");
  model_.loading = true;
  model_.loading_dir = dir;
  loader_->post([this, dir] {
    try {
      auto m = model::Model::load(device_, dir);
      auto files = infer::ChatModelFiles::load(dir, m.config);
      auto loaded = std::make_shared<LoadedModel>(LoadedModel{std::move(m), std::move(files)});
      measure(*loaded);
      events_.push(ev::ModelLoaded{std::move(loaded)});
    } catch (const std::exception& e) {
      events_.push(ev::ModelFailed{dir, e.what()});
    }
  });
}

void Studio::open_data(const fs::path& file) {
  // The demo's held-out split is no validation data for other data sets.
  auto& val = train_settings_.config.data_options.validation_file;
  if (!demo_data_.validation.empty() && val == demo_data_.validation && file != demo_data_.train) val.clear();
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
      const auto ds = train::load_dataset(file, model->files.tokenizer, model->files.chat, options);
      DataView v{.loaded = true, .path = file, .model_dir = model->model.dir};
      v.examples = ds.train_examples;
      v.validation_examples = ds.validation_examples;
      v.tokens = train::token_count(ds.train) + train::token_count(ds.validation);
      v.trained_tokens = train::trained_count(ds.train) + train::trained_count(ds.validation);
      v.longest = ds.longest;
      v.truncated = ds.truncated;
      v.problems = ds.warnings;
      for (size_t i = 0; i < std::min(kPreviewExamples, ds.train.size()); ++i)
        v.preview.push_back(preview_of(ds.train[i], model->files.tokenizer));
      events_.push(ev::DataLoaded{std::move(v)});
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
  if (demo_step_ != DemoStep::none) return;
  if (model_.loading) return fail("A model is loading", "Wait until " + model_.loading_dir.string() + " is loaded.");
  if (training()) return fail("Training is running", "The demo starts a training run: stop the current one first.");
  fs::path root;
  try {
    root = demo::default_data_root();
  } catch (const std::exception& e) {
    return fail("The demo cannot start", e.what());
  }
  demo_step_ = DemoStep::making;
  model_.loading = true;
  model_.loading_dir = root / demo::kDemoModelFolder;
  status_ = "Looking for the demo model in " + model_.loading_dir.string() + " ...";
  loader_->post([this, root] {
    try {
      int shown = -1;
      auto made = demo::ensure_demo_model(root, [&](std::string_view stage, double fraction) {
        const int percent = int(fraction * 100 + 0.5);
        if (percent / 10 == shown / 10) return;
        shown = percent;
        events_.push(ev::Status{"Making the demo model (first use): " + std::string(stage) + " " + std::to_string(percent) + "%"});
      });
      events_.push(ev::DemoReady{made.dir, demo::ensure_demo_data(root)});
    } catch (const std::exception& e) {
      events_.push(ev::ModelFailed{root / demo::kDemoModelFolder, e.what()});
    }
  });
}

// Called every frame while the demo has steps left; each step waits for the one before.
void Studio::advance_demo() {
  if (demo_step_ == DemoStep::making) {
    if (!model_.loading) demo_step_ = DemoStep::none;  // ev::ModelFailed: its dialog says why
    return;
  }
  if (demo_step_ == DemoStep::opening) {
    if (model_.loading || data_.loading) return;
    if (!model_.loaded || model_.loaded->model.dir != demo_model_dir_) {
      demo_step_ = DemoStep::none;  // the model did not load (a dialog says why)
      return;
    }
    const bool data_ready = data_.loaded && data_.path == demo_data_.train && data_.model_dir == demo_model_dir_;
    if (!data_ready) {
      if (demo_data_asked_) demo_step_ = DemoStep::none;  // the data did not load
      else open_data(demo_data_.train), demo_data_asked_ = true;
      return;
    }
    start_training("demo-" + local_stamp());
    demo_step_ = training() ? DemoStep::training : DemoStep::none;
    return;
  }
  if (demo_step_ == DemoStep::training && !training()) {
    demo_step_ = DemoStep::none;
    if (train_.state != TrainState::finished && train_.state != TrainState::stopped) return;
    Command use = cmd::UseAdapter{train_.adapter_dir, train_.out_dir.filename().string() + " (final)"};
    run(use);
    const auto prompts = demo::demo_prompts(1);
    if (!prompts.empty()) send_chat(prompts[0].question);
    status_ = "Demo: the base model and the adapter answer a question the training data did not have. The demo model "
              "is tiny and random: for real work open a real model (e.g. Qwen2.5-0.5B-Instruct).";
  }
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
  store_worker_->post([this, text, adapter, run] {
    if (!db_) return;
    if (!chat_id_) chat_id_ = db_->create_chat({.run_id = run, .adapter_path = adapter, .title = text.substr(0, 80)});
    db_->add_chat_message(chat_id_, {"user", text});
  });
}

void Studio::export_adapter(int64_t run, const fs::path& dir, bool merged) {
  const auto* r = runs_.find(run);
  if (!r) return;
  const fs::path source = r->out_dir / "adapter";
  const fs::path model_dir = r->model_path;
  status_ = std::string(merged ? "Merging the adapter of run " : "Exporting the adapter of run ") + std::to_string(run) +
            " ...";
  loader_->post([this, run, source, model_dir, dir, merged] {
    try {
      std::string what;
      if (merged) {  // CPU work on mapped files (model/merge.h)
        const auto report = model::merge_adapter(model_dir, source, dir);
        what = "Merged model of run " + std::to_string(run) + " written to " + dir.string() + " (" +
               std::to_string(report.merged) + " matrices merged, " + std::to_string(report.shards) + " weight file" +
               (report.shards == 1 ? "" : "s") + ").";
      } else {
        const auto config = model::load_config(model_dir);
        const auto adapter = model::load_peft_adapter(device_, config, source);
        model::save_peft_adapter(adapter, config, dir, model_dir.string());
        what = "Adapter of run " + std::to_string(run) + " written to " + dir.string() + " (PEFT).";
      }
      const auto format = merged ? store::ExportFormat::merged : store::ExportFormat::peft;
      store_worker_->post([this, run, dir, format] {
        if (db_) db_->add_export(run, dir, format);
      });
      events_.push(ev::Status{what});
    } catch (const std::exception& e) {
      events_.push(ev::Failure{merged ? "The merged model cannot be written" : "The adapter cannot be exported", e.what()});
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

// [SECTION] Menu, status bar, dialogs

void Studio::draw_menu() {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open model folder...")) io_.send(cmd::Browse{cmd::BrowseFor::model});
    if (ImGui::MenuItem("Open data file...")) io_.send(cmd::Browse{cmd::BrowseFor::data});
    if (ImGui::MenuItem("Try the demo")) io_.send(cmd::TryDemo{});
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) quit_ = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (Panel& p : panels_) ImGui::MenuItem(p.title, nullptr, &p.open);
    ImGui::Separator();
    if (ImGui::MenuItem("Tile windows")) layout_.tile();
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("lorastudio " LS_VERSION " - LoRA fine-tuning on any Vulkan GPU");
    ImGui::TextColored(kDim, "Device: %s (%s)", device_.report().name.c_str(), device_.report().type.c_str());
    ImGui::TextColored(kDim, "Run store: %s", options_.store.string().c_str());
    ImGui::EndMenu();
  }
  if (ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed('Q', false)) quit_ = true;  // the GLFW backend's key codes
  ImGui::EndMainMenuBar();
}

void Studio::draw_status_bar() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float h = ImGui::GetFrameHeight();
  ImGui::SetNextWindowPos({vp->WorkPos.x, vp->WorkPos.y + vp->WorkSize.y - h});
  ImGui::SetNextWindowSize({vp->WorkSize.x, h});
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, {ImGui::GetStyle().FramePadding.x * 2, ImGui::GetStyle().FramePadding.y});
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoNav;
  if (ImGui::Begin("##status", nullptr, flags)) {
    ImGui::TextUnformatted(status_.c_str());
    char right[160];
    const size_t v = device_.validation_messages();
    std::snprintf(right, sizeof right, "%s%s   %s   %.0f draws/s", v ? "validation messages: " : "",
                  v ? std::to_string(v).c_str() : "", device_.report().name.c_str(), frame_stats_.draws_per_s);
    const float w = ImGui::CalcTextSize(right).x;
    ImGui::SameLine(std::max(ImGui::GetWindowWidth() - w - ImGui::GetStyle().WindowPadding.x,
                             ImGui::GetCursorPosX() + ImGui::GetFontSize()));
    ImGui::TextColored(v ? kBad : kDim, "%s", right);
  }
  ImGui::End();
  ImGui::PopStyleVar(2);
}

void Studio::draw_error_dialog() {
  if (errors_.empty()) return;
  if (!ImGui::IsPopupOpen("Error###error")) ImGui::OpenPopup("Error###error");
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos({display.x * 0.5f, display.y * 0.4f}, ImGuiCond_Appearing, {0.5f, 0.5f});
  ImGui::SetNextWindowSizeConstraints({ImGui::GetFontSize() * 24, 0}, {display.x * 0.7f, display.y * 0.8f});
  if (ImGui::BeginPopupModal("Error###error", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    const auto& [title, message] = errors_.front();
    ImGui::TextColored(kBad, "%s", title.c_str());
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
    ImGui::TextUnformatted(message.c_str());
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    if (ImGui::Button("OK", {ImGui::GetFontSize() * 6, 0}) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
      errors_.erase(errors_.begin());
      ImGui::CloseCurrentPopup();
    }
    io_.tag("error.ok");
    ImGui::SameLine();
    if (ImGui::Button("Copy")) ImGui::SetClipboardText((title + ": " + message).c_str());
    ImGui::EndPopup();
  }
}

void Studio::draw_browser() {
  if (errors_.size()) return;  // the error dialog first
  auto chosen = browser_.draw(io_);
  if (!chosen) return;
  switch (browsing_.purpose) {
    case cmd::BrowseFor::model: open_model(*chosen); break;
    case cmd::BrowseFor::data: open_data(*chosen); break;
    case cmd::BrowseFor::export_adapter: export_adapter(browsing_.run, *chosen, false); break;
    case cmd::BrowseFor::export_merged: export_adapter(browsing_.run, *chosen, true); break;
  }
}

// [SECTION] Run store thread

void Studio::poll_store() {
  events_.push(ev::DeviceMemory{device_.memory().stats()});
  if (!db_) return;
  if (Clock::now() - last_stale_check_ > std::chrono::seconds(30)) {
    last_stale_check_ = Clock::now();
    db_->mark_stale_runs(store::unix_now(), kStaleAfterS);
  }
  auto runs = db_->list_runs();
  if (runs.size() > 200) runs.resize(200);
  for (const auto& r : runs) {
    // A resume deleted the steps past its checkpoint, which polling by rev cannot see: read them all again.
    auto notes = polled_notes_.find(r.id);
    const bool resumed = notes != polled_notes_.end() && notes->second != r.notes;
    if (resumed) polled_rev_[r.id] = 0;
    polled_notes_[r.id] = r.notes;
    auto rows = db_->metrics_changed(r.id, polled_rev_[r.id]);
    if (resumed || !rows.empty()) {
      for (const auto& m : rows) polled_rev_[r.id] = std::max(polled_rev_[r.id], m.rev);
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
      events_.push(ev::RunMetrics{r.id, std::move(rows), resumed});
      events_.push(ev::RunCheckpoints{r.id, db_->checkpoints(r.id)});
    }
  }
  events_.push(ev::RunsListed{std::move(runs)});
}

}  // namespace ls::ui
