#pragma once
// The desktop app's UI state and the workers behind it. Once per frame (between ImGui::NewFrame and
// ImGui::Render) frame() drains the workers' events into the views, draws the menu, the panels, the
// status bar and dialogs, and carries out the panels' commands by handing work to the workers:
//   loader  loads models and data sets, exports adapters (PEFT, merged models) and charts
//   trainer train::train on its own thread (pause, resume, stop, checkpoint now)
//   chat    generators for the base model and the adapter, one reply at a time
//   evaluator  a run's adapter and the base answering its held-out examples, batched (the Evaluate panel)
//   store   the run store: lists runs and polls their metrics (also runs of other processes), saves
//           chats and settings
// The UI thread never waits on any of them or on their GPU work. Studio's own code is in ui/studio*.cpp
// (see ui/studio.cpp); the panels (ui/panel_registry.h), their layout (ui/layout.h), the demo's steps
// (ui/demo_flow.h) and the store thread's side (ui/store_sync.h) are their own.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "ui/chat_worker.h"
#include "ui/demo_flow.h"
#include "ui/events.h"
#include "ui/file_browser.h"
#include "ui/layout.h"
#include "ui/panel_registry.h"
#include "ui/store_sync.h"
#include "ui/train_worker.h"
#include "ui/worker.h"
#include "vk/device.h"

namespace ls::ui {

struct StudioOptions {
  std::filesystem::path store;     // the run store (empty: store::default_store_path())
  std::filesystem::path runs_dir;  // where training runs go (empty: "runs" beside the store)
};

// Frame statistics, and the same while a training run is going (the UI must stay at display rate).
// A frame is drawn when it went to the GPU, up to date when the screen shows it (drawn now, or
// identical to the frame on the screen, which is then not drawn again).
struct FrameStats {
  uint64_t frames = 0, drawn = 0, up_to_date = 0;
  uint64_t training_frames = 0, training_drawn = 0, training_up_to_date = 0;
  double max_frame_ms = 0;     // the longest UI frame (input, drawing, submit) while training ran
  double max_frame_cpu_wait_ms = 0;  // of which the UI thread waited for a CPU (another process had it)
  double max_frame_ms_on_cpu = 0;    // the longest frame less its wait for a CPU
  double max_stale_ms = 0;     // the longest time the screen lagged behind the UI while training ran
  double draws_per_s = 0;      // recent rate of drawn frames
};

// What the --ui-script driver waits for and what its state file reports.
struct StudioState {
  bool model_loaded = false, model_loading = false, data_loaded = false, data_loading = false;
  TrainState train = TrainState::idle;
  uint32_t step = 0, total = 0;
  int64_t run_id = 0;
  bool chat_generating = false;
  size_t chat_turns = 0;
  uint64_t chat_tokens = 0;
  std::string last_reply[2], last_reply_by[2];  // the last turn's replies, and who answered each
  size_t loss_points = 0, gpu_groups = 0;
  bool browser_open = false, dialog_open = false;
  std::vector<std::string> errors;  // every error dialog shown, in order
  FrameStats frames;
  struct SeenRun {  // the Runs panel's list, also runs of other processes
    int64_t id = 0;
    std::string name, status;
    size_t metrics = 0;      // steps whose metrics the UI has read
    size_t checkpoints = 0;  // its checkpoints the UI has read (Resume needs one)
  };
  std::vector<SeenRun> runs;
  bool eval_running = false;
  size_t eval_rows = 0, eval_replies = 0;
  std::string eval_file, eval_error;
};

class Studio {
 public:
  Studio(vk::Device& device, StudioOptions options);
  ~Studio();  // stops a training run (writing its checkpoint) and the workers; saves the settings
  Studio(const Studio&) = delete;
  Studio& operator=(const Studio&) = delete;

  void frame();
  // Paths dropped on the window: a model folder, a JSONL file or an adapter folder.
  void drop(const std::vector<std::filesystem::path>& paths);
  // After each frame: how long it took (and of that, how long the thread waited for a CPU), whether it
  // was drawn, whether the screen shows it.
  void note_frame(double ms, double cpu_wait_ms, bool drawn, bool up_to_date);
  bool quit_requested() const { return quit_; }
  void request_quit() { quit_ = true; }
  bool training() const;
  StudioState state() const;
  const PanelIo& io() const { return io_; }
  PanelIo& io() { return io_; }
  const vk::Device& device() const { return device_; }

 private:
  void apply(Event& e);
  void run(Command& c);
  void draw_menu();
  void draw_status_bar();
  void draw_error_dialog();
  void draw_browser();
  void refresh_memory();
  void save_settings(bool now);

  void open_model(const std::filesystem::path& dir);
  void open_data(const std::filesystem::path& file);
  void start_training(std::string run_name = {});  // run_name: else the Train panel's, else a dated one
  void resume_run(int64_t run);                     // with its saved options, from its latest checkpoint
  void launch_training(const train::TrainConfig& c);
  void try_demo();
  void advance_demo();
  void send_chat(const std::string& text);
  // A stored chat as the conversation: its turns and replies (the adapter's side where it had one), and its
  // adapter chosen again when it is there and fits the loaded model.
  void show_chat(const store::ChatInfo& chat, const std::vector<store::ChatMessage>& messages);
  // PEFT folder, merged model folder, or GGUF folder for llama.cpp/Ollama (model/gguf_folder.h).
  void export_adapter(int64_t run, const std::filesystem::path& dir, store::ExportFormat format,
                      model::GgufFileType gguf_type = model::GgufFileType::f16);
  void export_chart(bool png);
  // The run's final adapter and the base model answer the run's held-out examples (ui/studio_eval.cpp).
  void evaluate_run(int64_t run);
  void fail(std::string title, std::string message);

  vk::Device& device_;
  StudioOptions options_;
  Events events_;
  PanelIo io_;
  bool quit_ = false;

  ModelView model_;
  DataView data_;
  std::filesystem::path data_wanted_;  // opened before a model: read once one is loaded
  std::filesystem::path model_wanted_;  // opened while another model loads: opened once that one is done
  TrainSettings train_settings_;
  TrainView train_;
  RunsView runs_;
  ChatSettings chat_settings_;
  ChatView chat_;
  MemoryView memory_;
  EvalSettings eval_settings_;
  EvalView eval_;
  std::shared_ptr<std::atomic<bool>> eval_stop_;  // the running evaluation's: set to stop it
  vk::MemoryStats memory_stats_;
  vk::MemoryBudget memory_budget_;
  uint64_t chat_kv_bytes_ = 0, chat_lora_bytes_ = 0;

  DemoFlow demo_;

  std::vector<Panel> panels_ = make_panels();
  PanelStates panel_states_;
  Layout layout_;
  FileBrowser browser_;
  cmd::Browse browsing_{};

  std::string status_;
  std::vector<std::pair<std::string, std::string>> errors_;  // waiting to be shown
  std::vector<std::string> error_log_;
  FrameStats frame_stats_;
  std::chrono::steady_clock::time_point last_up_to_date_{}, last_memory_{}, last_settings_{}, rate_since_{};
  uint64_t rate_draws_ = 0;
  std::string saved_settings_;

  StoreSync store_{events_};  // the store thread's once the workers run

  // Last, so that they stop before everything above goes.
  std::unique_ptr<Worker> store_worker_, loader_, evaluator_;
  std::unique_ptr<ChatWorker> chat_worker_;
  std::unique_ptr<TrainWorker> trainer_;
};

}  // namespace ls::ui
