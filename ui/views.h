#pragma once
// What the panels draw from (views, owned by the UI thread and refreshed from worker events once per
// frame by ui/studio.cpp) and what they ask for (commands, carried out by the studio after drawing).
// Panels never call the engine and never wait.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "infer/chat_session.h"
#include "infer/eval_set.h"
#include "model/gguf_mix.h"
#include "infer/sampler.h"
#include "model/weights.h"
#include "store/run_store.h"
#include "train/memory_plan.h"
#include "train/trainer.h"
#include "vk/memory_budget.h"

namespace ls::ui {

namespace fs = std::filesystem;

// [SECTION] Model

// A model loaded for the UI (information, chat). Immutable once loaded; shared with the chat worker.
struct LoadedModel {
  model::Model model;
  infer::ChatModelFiles files;
  uint64_t parameters = 0;    // elements of the base weights (a tied lm_head counted once)
  uint64_t weight_bytes = 0;  // device memory they take
  std::string dtype;          // "bf16", "f16", "f32" (several: "mixed"); "nf4" or "q8" when packed
};

struct ModelView {
  std::shared_ptr<const LoadedModel> loaded;
  bool loading = false;
  fs::path loading_dir;
};

// [SECTION] Data

// One example as the model sees it: the rendered text in pieces, each trained or not.
struct PreviewPiece {
  std::string text;
  bool trained = false;
};
struct PreviewExample {
  size_t line = 0;
  size_t tokens = 0, trained = 0;
  std::vector<PreviewPiece> pieces;
};

struct DataView {
  bool loading = false;
  bool loaded = false;
  fs::path path;
  fs::path model_dir;  // the tokenizer it was counted with
  size_t examples = 0, validation_examples = 0, tokens = 0, trained_tokens = 0, longest = 0, truncated = 0;
  std::vector<std::string> problems;  // "<file>:<line>: problem", truncation counts
  std::vector<PreviewExample> preview;
};

// [SECTION] Training

enum class TrainState { idle, starting, running, paused, stopping, finished, stopped, failed };
const char* train_state_name(TrainState s);

// The Train panel's settings: every option of `lorastudio --batch`.
struct TrainSettings {
  train::TrainConfig config;
  bool targets[model::kLoraTargetCount] = {true, false, true, false, false, false, false};  // q_proj, v_proj
  int schedule = 1;  // constant, linear, cosine
  float val_fraction = 0;
  std::string run_name;  // the run folder's name under the runs folder (empty: a dated name)
  TrainSettings();
};

// Moves the ticked targets the model does not have to what holds them there (model::fit_targets: the default
// ticks q_proj and v_proj become qkv_proj on Phi-3). When a model is loaded.
void fit_targets(TrainSettings& s, const model::ModelConfig& c);

struct TrainView {
  TrainState state = TrainState::idle;
  int64_t run_id = 0;
  uint32_t step = 0, total = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
  std::optional<double> val_loss;
  fs::path out_dir, adapter_dir;
  std::string error;
  bool checkpoint_asked = false;
};

// [SECTION] Runs and metrics

struct RunsView {
  std::vector<store::RunInfo> runs;                            // newest first
  std::map<int64_t, std::vector<store::MetricRow>> metrics;   // by run, rows by step
  std::map<int64_t, std::vector<store::Checkpoint>> checkpoints;
  std::optional<int64_t> shown;    // the run the charts and GPU timing show (default: the latest)
  std::optional<int64_t> overlay;  // a second run whose loss is drawn beside it
  const store::RunInfo* find(int64_t id) const;
  // The run whose folder holds `adapter` (its final adapter or a checkpoint), if any.
  const store::RunInfo* owner_of(const fs::path& adapter) const;
};

// Whether a run was trained on the model folder `model` (paths compared as the file system resolves them).
bool trained_on(const store::RunInfo& run, const fs::path& model);

// [SECTION] Chat

enum ChatSide : int { kBase = 0, kTuned = 1 };  // the base model, the model with the adapter

struct ChatReply {
  bool wanted = false;    // this side answers this turn
  bool streaming = false;
  std::string text;
  uint32_t tokens = 0;
  std::string stats;      // "12 tokens, 40.1 tok/s, stop: eos"
  std::string error;
  std::string answered_by;  // "base model", or the adapter's label when the turn was sent
};

struct ChatTurn {
  std::string user;
  ChatReply reply[2];
};

struct ChatSettings {
  infer::SamplerOptions sampling{.temperature = 0.7f};
  uint32_t max_tokens = 256;
  bool use_adapter = true;
  bool side_by_side = false;
  std::string system;
};

struct ChatView {
  std::vector<ChatTurn> turns;
  fs::path adapter;          // the adapter folder chosen (empty: none)
  std::string adapter_label;  // "run 3 (final)", "checkpoint-20 of run 3", a folder name
  bool generating = false;
  uint64_t tokens_total = 0;  // tokens produced since the app started
  int64_t chat_id = 0;        // in the run store; 0 until the first message
  std::vector<store::ChatInfo> history;  // the stored chats, newest first (the Chat panel's History)
};

// [SECTION] Evaluation

// A run's adapter and the base model answering the run's held-out validation examples side by side (the
// Evaluate panel); the rows are written to the run folder as JSON Lines when all replies are in.
struct EvalSettings {
  uint32_t max_tokens = 128;  // new tokens a reply (greedy decoding)
  bool compare_base = true;   // the base model answers too
  uint32_t batch = 16;        // sequences decoding together
};

struct EvalView {
  bool running = false;
  int64_t run = 0;
  std::string run_name;
  bool compared = false;              // rows hold the base model's replies too
  std::vector<infer::EvalRow> rows;   // the prompts and references first, each reply as it comes
  std::vector<uint8_t> answered[2];   // per side (ChatSide), per row: its reply is in
  size_t replies = 0, wanted = 0;     // replies in, replies asked for
  fs::path saved;                     // the JSON Lines file written, once complete
  std::string summary, error;         // "4 examples: adapter 2.1 s, base 1.9 s"; why it failed or "stopped"
};

// [SECTION] Device memory

struct MemoryView {
  uint64_t device_local = 0;   // the device's memory (all device-local heaps)
  uint64_t used = 0, reserved = 0;  // allocated by the engine / in its blocks
  uint64_t weights = 0, lora = 0, kv_cache = 0;  // the rest of `used` is activations and scratch
  vk::MemoryBudget budget;        // what the engine may still take (vk/memory_budget.h)
  train::PlanDevice plan_device;  // for the Train panel's memory plan
};

// [SECTION] Commands (panels -> studio)

namespace cmd {
struct OpenModel { fs::path dir; };
struct OpenData { fs::path file; };
struct StartTraining {};
struct PauseTraining {};
struct ResumeTraining {};
struct StopTraining {};
struct CheckpointNow {};
struct SendChat { std::string text; };
struct StopChat {};
struct ClearChat {};
struct OpenChat { int64_t id; };  // a stored chat shown again, its next messages added to it
struct UseAdapter { fs::path dir; std::string label; };  // empty dir: none
struct ShowRun { int64_t run; };
struct ResumeRun { int64_t run; };  // an interrupted run, from its latest checkpoint, into its own folder and entry
struct OverlayRun { std::optional<int64_t> run; };
struct ExportAdapter { int64_t run; fs::path dir; store::ExportFormat format = store::ExportFormat::peft; };
enum class BrowseFor { model, data, export_adapter, export_merged, export_gguf };
// Opens the file browser; export_gguf: the merged model's weights as gguf_type.
struct Browse {
  BrowseFor purpose;
  int64_t run = 0;
  model::GgufFileType gguf_type = model::GgufFileType::f16;
};
struct ExportChart { bool png; };                      // the loss chart of the shown run
struct Status { std::string text; };
struct Failure { std::string title, message; };
struct TryDemo {};
struct EvaluateRun { int64_t run; };  // its adapter (and the base) on its held-out examples
struct StopEvaluation {};  // the demo model and data, training, then base and adapter answer a held-out question
}  // namespace cmd

using Command = std::variant<cmd::OpenModel, cmd::OpenData, cmd::StartTraining, cmd::PauseTraining, cmd::ResumeTraining,
                             cmd::StopTraining, cmd::CheckpointNow, cmd::SendChat, cmd::StopChat, cmd::ClearChat,
                             cmd::OpenChat, cmd::UseAdapter, cmd::ShowRun, cmd::ResumeRun, cmd::OverlayRun, cmd::ExportAdapter, cmd::Browse,
                             cmd::ExportChart, cmd::Status, cmd::Failure, cmd::TryDemo, cmd::EvaluateRun,
                             cmd::StopEvaluation>;

}  // namespace ls::ui
