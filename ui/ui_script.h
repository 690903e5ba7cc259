#pragma once
// `lorastudio --ui-script FILE`: a scenario that drives the GUI through the same code paths as a user.
// The mouse moves onto a tagged item (PanelIo::tag) and presses and releases there, keys go down and up,
// text is typed, paths are dropped on the window: all through ImGuiIO, after the GLFW backend has put the
// real input there and before ImGui::NewFrame, so ImGui's own widget logic does the rest.
//
// One command per line; '#' starts a comment; arguments are the rest of the line:
//   click NAME             the item tagged NAME (waits up to 10 s for it to be on screen)
//   ctrl_click NAME        the same with Ctrl held (a slider becomes a text field)
//   type TEXT              text into the item that has the keyboard focus
//   key KEY                enter, escape, tab, backspace or ctrl+a
//   drop PATH              PATH dropped on the window (a model folder, a JSONL file, an adapter folder)
//   resize WIDTHxHEIGHT    the window's size, as a user drags its border
//   wait_for CONDITION [SECONDS]  model | data | training | trained | chat_done | eval_done | steps>=N | file:PATH |
//                          run_metrics:NAME>=N (the Runs list has read N steps of run NAME),
//                          run_checkpoints:NAME>=N (... N of its checkpoints) (default 60 s)
//   frames N               let N frames pass
//   sleep SECONDS          let time pass
//   screenshot FILE        a PNG of the next frame that reaches the screen
//   state FILE             the state below as JSON (also written, with "script_error", when a step fails)
//   timeout SECONDS        the whole script fails after this long (default 300)
//   quit
// State: model/data loaded, training state and steps, points on the loss chart, op groups in the GPU
// timing table, chat turns and tokens and the last replies, validation messages, every error dialog,
// frame statistics while training ran, screenshots written, the runs listed (name, status, steps read),
// the evaluation (running, rows, replies, the file written, its error), script_error.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/studio.h"

namespace ls::ui {

// What the script asks of the window.
struct ScriptHost {
  std::function<void(const std::filesystem::path&)> request_screenshot;
  std::function<bool(const std::filesystem::path&)> screenshot_written;
  std::function<void(int width, int height)> resize;
};

class UiScript {
 public:
  // Throws ls::Error naming "<file>:<line>" for an unknown command or a missing argument.
  static UiScript load(const std::filesystem::path& file);
  static UiScript parse(const std::string& text, const std::string& source);

  // Between the platform backend's NewFrame and ImGui::NewFrame: this frame's input, and the next steps.
  void before_frame(ImGuiIO& io, Studio& studio, const ScriptHost& host);
  bool done() const { return done_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  size_t steps() const { return commands_.size(); }

 private:
  struct Command {
    std::string verb, arg;
    size_t line = 0;
  };
  // Runs the current command for this frame; true when it is finished.
  bool step(const Command& c, ImGuiIO& io, Studio& studio, const ScriptHost& host);
  void fail(const Command& c, const std::string& why, Studio& studio);
  void write_state(const std::filesystem::path& file, const Studio& studio) const;
  bool condition(const std::string& what, const Studio& studio) const;

  std::string source_;
  std::vector<Command> commands_;
  std::filesystem::path state_file_;  // the first `state` command's, for failures
  size_t next_ = 0;
  int phase_ = 0;
  std::chrono::steady_clock::time_point started_{}, step_started_{};
  double timeout_s_ = 300;
  ImVec2 mouse_{-1, -1};
  bool mouse_down_ = false;
  int key_down_ = -1;
  bool ctrl_ = false;
  std::vector<std::string> screenshots_;
  std::string error_;
  bool done_ = false;
};

}  // namespace ls::ui
