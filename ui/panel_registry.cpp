#include "ui/panel_registry.h"

namespace ls::ui {

// Each panel's draw function, defined in its own file (ui/<name>_panel.cpp).
void draw_model_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_data_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_train_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_charts_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_gpu_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_chat_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_runs_panel(PanelContext& ctx, const char* title, bool* p_open);
void draw_eval_panel(PanelContext& ctx, const char* title, bool* p_open);

std::vector<Panel> make_panels() {
  // Three columns: Model / Data / Train  |  Charts / GPU timing  |  Chat / Runs; Evaluate floats.
  return {
      {.title = "Model", .key = "model", .tile = {.column = 0, .height = 0.27f}, .draw = draw_model_panel},
      {.title = "Data", .key = "data", .tile = {.column = 0, .height = 0.27f}, .draw = draw_data_panel},
      {.title = "Train", .key = "train", .tile = {.column = 0, .height = 0.46f}, .draw = draw_train_panel},
      {.title = "Charts", .key = "charts", .tile = {.column = 1, .height = 0.58f}, .draw = draw_charts_panel},
      {.title = "GPU timing", .key = "gpu", .tile = {.column = 1, .height = 0.42f}, .draw = draw_gpu_panel},
      {.title = "Chat", .key = "chat", .tile = {.column = 2, .height = 0.64f}, .draw = draw_chat_panel},
      {.title = "Runs", .key = "runs", .tile = {.column = 2, .height = 0.36f}, .draw = draw_runs_panel},
      // Over the others, opened by the Runs panel's Evaluate.
      {.title = "Evaluate", .key = "eval", .tile = {.floating = true}, .draw = draw_eval_panel, .open = false},
  };
}

std::map<std::string, bool> open_flags(const std::vector<Panel>& panels) {
  std::map<std::string, bool> open;
  for (const Panel& p : panels) open[p.key] = p.open;
  return open;
}

void set_open_flags(std::vector<Panel>& panels, const std::map<std::string, bool>& open) {
  for (Panel& p : panels)
    if (auto it = open.find(p.key); it != open.end()) p.open = it->second;
}

}  // namespace ls::ui
