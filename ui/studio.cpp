// Studio, in five files by concern:
//   ui/studio.cpp           construction, the workers, the frame loop, frame statistics, settings
//   ui/studio_events.cpp    events (workers -> UI)
//   ui/studio_commands.cpp  commands (panels -> workers) and the work they start
//   ui/studio_menus.cpp     the menu bar, the status bar, the error dialog, the file browser
//   ui/studio_eval.cpp      evaluating a run's adapter on its held-out examples
// Index of this file:
// [SECTION] Construction and the workers
// [SECTION] Frame
#include "store/run_store.h"
#include "ui/studio.h"

#include <algorithm>
#include <utility>

#include "model/layer_spec.h"
#include "model/peft_adapter.h"
#include "ui/settings.h"

namespace ls::ui {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(500);

// Bytes of the adapter, its gradients and two AdamW moments that training with the Train panel's settings
// holds (its ticked targets, as Start passes them; the panel keeps only those the model has).
uint64_t training_lora_bytes(const model::ModelConfig& mc, const TrainSettings& s) {
  const model::LayerSpec layer = model::layer_spec(mc, 0);
  uint64_t per_layer = 0;
  for (size_t i = 0; i < model::kLoraTargetCount; ++i) {
    if (!s.targets[i] || !layer.has_projection(model::LoraTarget(i))) continue;
    auto [out, in] = model::target_shape(mc, model::LoraTarget(i));
    per_layer += uint64_t(s.config.rank) * (uint64_t(in) + out) * 4;
  }
  return 4 * per_layer * mc.num_layers;
}

}  // namespace

// [SECTION] Construction and the workers

Studio::Studio(vk::Device& device, StudioOptions options) : device_(device), options_(std::move(options)) {
  options_.store = store::path_or_default(options_.store);
  if (options_.runs_dir.empty()) options_.runs_dir = options_.store.parent_path() / "runs";
  // Settings first, on this thread, before any worker touches the store.
  UiSettings settings;
  try {
    if (auto text = store_.open(options_.store)) read_settings(*text, settings);
  } catch (const std::exception& e) {
    fail("The run store cannot be opened", e.what());
  }
  train_settings_ = settings.train;
  chat_settings_ = settings.chat;
  eval_settings_ = settings.eval;
  set_open_flags(panels_, settings.panels);
  settings.panels = open_flags(panels_);  // every panel's flag, as save_settings writes them
  saved_settings_ = settings_json(settings);

  auto on_error = [this](const std::string& e) { events_.push(ev::Failure{"Unexpected error", e}); };
  store_worker_ = std::make_unique<Worker>(on_error, kPollPeriod, [this] {
    events_.push(ev::DeviceMemory{device_.memory().stats(), device_.memory_budget()});
    store_.poll();
  });
  loader_ = std::make_unique<Worker>(on_error);
  evaluator_ = std::make_unique<Worker>(on_error);
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
  if (eval_stop_) *eval_stop_ = true;
  evaluator_.reset();  // joins: the evaluation stops at its next token
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
    for (int side : {kBase, kTuned}) {
      s.last_reply[side] = chat_.turns.back().reply[side].text;
      s.last_reply_by[side] = chat_.turns.back().reply[side].answered_by;
    }
  s.loss_points = panel_states_.charts.loss_points;
  s.gpu_groups = panel_states_.gpu.groups_shown;
  s.browser_open = browser_.is_open();
  s.dialog_open = !errors_.empty();
  s.errors = error_log_;
  s.frames = frame_stats_;
  for (const auto& r : runs_.runs) {
    const auto m = runs_.metrics.find(r.id);
    const auto c = runs_.checkpoints.find(r.id);
    s.runs.push_back({r.id, r.name, store::run_status_name(r.status), m == runs_.metrics.end() ? 0 : m->second.size(),
                      c == runs_.checkpoints.end() ? 0 : c->second.size()});
  }
  s.eval_running = eval_.running;
  s.eval_rows = eval_.rows.size();
  s.eval_replies = eval_.replies;
  s.eval_file = eval_.saved.string();
  s.eval_error = eval_.error;
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
  if (!model_wanted_.empty() && !model_.loading) open_model(std::exchange(model_wanted_, {}));
  if (!data_wanted_.empty() && model_.loaded && !model_.loading) {
    open_data(data_wanted_);
    data_wanted_.clear();
  }
  if (demo_.active()) advance_demo();
  if (Clock::now() - last_memory_ > std::chrono::milliseconds(500)) refresh_memory();

  draw_menu();
  const std::vector<WindowPlace> places = layout_.places(panels_);
  PanelContext ctx{.model = model_, .data = data_, .train = train_, .runs = runs_, .chat = chat_, .memory = memory_,
                   .eval = eval_, .train_settings = train_settings_, .chat_settings = chat_settings_,
                   .eval_settings = eval_settings_, .state = panel_states_, .io = io_};
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
  memory_.budget = memory_budget_;
  memory_.plan_device = train::PlanDevice::of(device_);
  memory_.used = stats.used_bytes;
  memory_.reserved = stats.block_bytes;
  memory_.weights = model_.loaded ? model_.loaded->weight_bytes : 0;
  memory_.lora = chat_lora_bytes_;
  memory_.kv_cache = chat_kv_bytes_;
  // The trainer loads its own copy of the model and holds the adapter, its gradients and two moments.
  if (training() && train_.state != TrainState::starting && model_.loaded) {
    memory_.weights += model_.loaded->weight_bytes;
    memory_.lora += training_lora_bytes(model_.loaded->model.config, train_settings_);
  }
}

void Studio::save_settings(bool now) {
  if (!now && Clock::now() - last_settings_ < std::chrono::seconds(1)) return;
  last_settings_ = Clock::now();
  UiSettings s{.train = train_settings_, .chat = chat_settings_, .eval = eval_settings_,
               .model = model_.loaded ? model_.loaded->model.dir : fs::path(),
               .data = data_.loaded ? data_.path : data_wanted_,
               .panels = open_flags(panels_)};
  std::string text = settings_json(s);
  if (text == saved_settings_) return;
  saved_settings_ = text;
  if (now) {  // the workers are gone: this thread owns the store
    try {
      store_.save_settings(text);
    } catch (const std::exception&) {
    }
    return;
  }
  store_worker_->post([this, text] { store_.save_settings(text); });
}

}  // namespace ls::ui
