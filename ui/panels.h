#pragma once
// The panels: one ImGui window each, one file each (ui/<name>_panel.cpp). A panel is a function of the
// views (ui/views.h): it draws them, keeps its own widget state, edits the settings it owns, and asks
// for everything else through PanelIo commands. No engine calls, no waits.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <imgui.h>

#include "ui/chart.h"
#include "ui/panel_io.h"
#include "ui/views.h"

namespace ls::ui {

// Where a panel's window goes unless the user moved it (ui/layout.cpp); `force` re-tiles.
struct WindowPlace {
  ImVec2 pos, size;
  bool force = false;
};
void place_window(const WindowPlace& place);

struct ModelPanelState {
  bool open = true;
};
void draw_model_panel(const ModelView& model, const MemoryView& memory, ModelPanelState& s, PanelIo& io);

struct DataPanelState {
  bool open = true;
};
void draw_data_panel(const DataView& data, const ModelView& model, DataPanelState& s, PanelIo& io);

struct TrainPanelState {
  bool open = true;
};
void draw_train_panel(const TrainView& train, TrainSettings& settings, const ModelView& model, const DataView& data,
                      TrainPanelState& s, PanelIo& io);

struct ChartsPanelState {
  bool open = true;
  ChartView loss, lr, grad_norm, tokens;
  float smoothing = 0;
  bool log_y = false;
  size_t loss_points = 0;  // drawn in the latest frame (the --ui-script state reports it)
};
void draw_charts_panel(const RunsView& runs, ChartsPanelState& s, PanelIo& io);

struct GpuPanelState {
  bool open = true;
  int recent_steps = 40;  // bars drawn
  size_t groups_shown = 0;  // op groups in the latest step's table (for the --ui-script state)
};
void draw_gpu_panel(const RunsView& runs, const MemoryView& memory, GpuPanelState& s, PanelIo& io);

struct ChatPanelState {
  bool open = true;
  std::string input;
  bool scroll_to_bottom = false;
  size_t seen_turns = 0;
};
void draw_chat_panel(const ChatView& chat, ChatSettings& settings, const ModelView& model, const RunsView& runs,
                     ChatPanelState& s, PanelIo& io);

struct RunsPanelState {
  bool open = true;
  std::optional<int64_t> selected;
};
void draw_runs_panel(const RunsView& runs, const TrainView& train, RunsPanelState& s, PanelIo& io);

// Series of a run's metrics for the charts ("loss", "val loss", ...), x = step.
std::vector<ChartSeries> loss_series(const RunsView& runs, int64_t run, const char* suffix = "");

}  // namespace ls::ui
