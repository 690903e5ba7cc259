#pragma once
// The panels: one ImGui window each, one file each (ui/<name>_panel.cpp), one row each in the registry
// (ui/panel_registry.cpp), which places them (ui/layout.cpp) and calls them every frame they are open.
// A panel is a function of the views (ui/views.h): it draws them, keeps its own widget state, edits the
// settings it owns, and asks for everything else through PanelIo commands. No engine calls, no waits.
#include <cstddef>
#include <cstdint>
#include <optional>

#include <imgui.h>

#include "ui/chart.h"
#include "ui/panel_io.h"
#include "ui/views.h"

namespace ls::ui {

struct ChartsPanelState {
  ChartView loss, lr, grad_norm, tokens;
  float smoothing = 0;
  bool log_y = false;
  size_t loss_points = 0;  // drawn in the latest frame (the --ui-script state reports it)
};

struct GpuPanelState {
  int recent_steps = 40;  // bars drawn
  size_t groups_shown = 0;  // op groups in the latest step's table (for the --ui-script state)
};

struct ChatPanelState {
  std::string input;
  bool scroll_to_bottom = false;
  size_t seen_turns = 0;
};

struct RunsPanelState {
  std::optional<int64_t> selected;
  int gguf_type = 0;  // Export GGUF's weights: model::GgufFileType (f16, bf16, q8_0, q4_k_m)
};

struct EvalPanelState {
  int page = 0;  // of the rows shown
};

// The panels' widget state between frames (the studio reads some of it: exports, the --ui-script state).
struct PanelStates {
  ChartsPanelState charts;
  GpuPanelState gpu;
  ChatPanelState chat;
  RunsPanelState runs;
  EvalPanelState eval;
};

// What the panels draw from and write to, handed to each open panel every frame. A panel draws its window
// with ImGui::Begin(title, open): the title and the open flag are its registry row's.
struct PanelContext {
  const ModelView& model;
  const DataView& data;
  const TrainView& train;
  const RunsView& runs;
  const ChatView& chat;
  const MemoryView& memory;
  const EvalView& eval;
  TrainSettings& train_settings;  // edited by Train
  ChatSettings& chat_settings;    // edited by Chat
  EvalSettings& eval_settings;    // edited by Evaluate
  PanelStates& state;
  PanelIo& io;
};

// Series of a run's metrics for the charts ("loss", "val loss", ...), x = step.
std::vector<ChartSeries> loss_series(const RunsView& runs, int64_t run, const char* suffix = "");

}  // namespace ls::ui
