#pragma once
// What the workers tell the UI thread (through EventQueue<Event>, drained once per frame).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "demo/demo_data.h"
#include "infer/chat_session.h"
#include "store/run_store.h"
#include "train/trainer.h"
#include "ui/event_queue.h"
#include "ui/views.h"
#include "vk/memory.h"
#include "vk/memory_budget.h"

namespace ls::ui {

namespace ev {
struct ModelLoaded { std::shared_ptr<const LoadedModel> model; };
struct ModelFailed { std::filesystem::path dir; std::string error; };
struct DataLoaded { DataView data; };
struct DataFailed { std::filesystem::path file; std::string error; };
struct TrainStep { train::StepReport report; };
struct TrainPaused { bool paused; };
struct TrainDone { train::TrainResult result; };
struct TrainFailed { std::string error; };
struct ChatPiece { size_t turn; ChatSide side; std::string text; };
struct ChatDone { size_t turn; ChatSide side; infer::Reply reply; };
struct ChatFailed { size_t turn; ChatSide side; std::string error; };
struct ChatMemory { uint64_t kv_bytes, lora_bytes; };
struct RunsListed { std::vector<store::RunInfo> runs; };
// replace: the rows are all the run's (it was resumed: steps it had past the checkpoint are gone), not new ones.
struct RunMetrics { int64_t run; std::vector<store::MetricRow> rows; bool replace = false; };
struct RunCheckpoints { int64_t run; std::vector<store::Checkpoint> checkpoints; };
struct ChatsListed { std::vector<store::ChatInfo> chats; };  // newest first
struct ChatOpened { store::ChatInfo chat; std::vector<store::ChatMessage> messages; };
struct DeviceMemory { vk::MemoryStats stats; vk::MemoryBudget budget; };  // read on a worker: the allocator's lock may be busy
struct Status { std::string text; };
struct Failure { std::string title, message; };
// The evaluation's prompts (rows without replies), then each reply as it comes, then the end.
struct EvalPrompts { int64_t run; std::vector<infer::EvalRow> rows; bool compared; };
struct EvalReplied { ChatSide side; size_t row; infer::EvalReply reply; };
struct EvalDone { std::filesystem::path saved; std::string summary; };
struct EvalFailed { std::string error; };  // "stopped" when asked to stop
struct DemoReady { std::filesystem::path model_dir; demo::DemoData data; };  // made or found intact
}  // namespace ev

using Event = std::variant<ev::ModelLoaded, ev::ModelFailed, ev::DataLoaded, ev::DataFailed, ev::TrainStep, ev::TrainPaused,
                           ev::TrainDone, ev::TrainFailed, ev::ChatPiece, ev::ChatDone, ev::ChatFailed, ev::ChatMemory,
                           ev::RunsListed, ev::RunMetrics, ev::RunCheckpoints, ev::ChatsListed, ev::ChatOpened,
                           ev::DeviceMemory, ev::Status,
                           ev::Failure, ev::DemoReady, ev::EvalPrompts, ev::EvalReplied, ev::EvalDone,
                           ev::EvalFailed>;
using Events = EventQueue<Event>;

}  // namespace ls::ui
