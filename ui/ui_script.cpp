#include "ui/ui_script.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "error.h"
#include "ui/glyphs.h"
#include "util/atomic_file.h"

namespace ls::ui {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kItemWaitS = 10;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

UiScript UiScript::load(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open the UI script");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), file.string());
}

UiScript UiScript::parse(const std::string& text, const std::string& source) {
  static const std::vector<std::string> kVerbs = {"click", "ctrl_click", "type", "resize",  "key",        "drop",    "wait_for", "frames",
                                                  "sleep", "state", "screenshot", "timeout", "quit"};
  UiScript s;
  s.source_ = source;
  std::istringstream in(text);
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    Command c{line.substr(0, space), space == std::string::npos ? "" : trim(line.substr(space)), n};
    const std::string where = source + ":" + std::to_string(n) + ": ";
    if (std::find(kVerbs.begin(), kVerbs.end(), c.verb) == kVerbs.end()) throw Error(where + "unknown command \"" + c.verb + "\"");
    if (c.arg.empty() && c.verb != "quit") throw Error(where + c.verb + " needs an argument");
    if (c.verb == "key" && c.arg != "enter" && c.arg != "escape" && c.arg != "tab" && c.arg != "backspace" &&
        c.arg != "ctrl+a")
      throw Error(where + "key \"" + c.arg + "\" is not one of enter, escape, tab, backspace, ctrl+a");
    if (c.verb == "timeout") {
      s.timeout_s_ = std::atof(c.arg.c_str());
      continue;
    }
    if (c.verb == "state" && s.state_file_.empty()) s.state_file_ = c.arg;
    s.commands_.push_back(std::move(c));
  }
  return s;
}

void UiScript::before_frame(ImGuiIO& io, Studio& studio, const ScriptHost& host) {
  if (done_) return;
  if (started_ == Clock::time_point{}) started_ = step_started_ = Clock::now();
  // Input stays where the script put it, whatever the backend read from the real devices.
  io.MousePos = mouse_;
  io.MouseDown[0] = mouse_down_;
  for (int k : {ImGuiKey_Enter, ImGuiKey_Escape, ImGuiKey_Tab, ImGuiKey_Backspace, ImGuiKey_A})
    io.KeysDown[io.KeyMap[k]] = key_down_ == k;
  io.KeyCtrl = ctrl_;
  if (next_ >= commands_.size()) {
    done_ = true;
    return;
  }
  const Command& c = commands_[next_];
  if (seconds_since(started_) > timeout_s_) return fail(c, "the script ran past its timeout", studio);
  if (step(c, io, studio, host)) {
    ++next_;
    phase_ = 0;
    step_started_ = Clock::now();
  }
}

bool UiScript::step(const Command& c, ImGuiIO& io, Studio& studio, const ScriptHost& host) {
  const std::string& v = c.verb;
  if (v == "click" || v == "ctrl_click") {
    const ItemRect* r = studio.io().item(c.arg);
    const bool on_screen = r && r->visible && r->frame >= ImGui::GetFrameCount() - 1 && r->steady >= 2;
    if (phase_ == 0) {
      studio.io().want(on_screen ? "" : c.arg);
      if (!on_screen) {
        if (seconds_since(step_started_) > kItemWaitS) fail(c, "\"" + c.arg + "\" is not on the screen", studio);
        return false;
      }
      mouse_ = {(r->min.x + r->max.x) * 0.5f, (r->min.y + r->max.y) * 0.5f};
      io.MousePos = mouse_;
      phase_ = 1;
      return false;
    }
    if (phase_ == 1) {
      mouse_down_ = io.MouseDown[0] = true;
      ctrl_ = io.KeyCtrl = v == "ctrl_click";
      phase_ = 2;
      return false;
    }
    mouse_down_ = io.MouseDown[0] = false;
    ctrl_ = io.KeyCtrl = false;
    return true;
  }
  if (v == "type") {
    io.AddInputCharactersUTF8(c.arg.c_str());
    return true;
  }
  if (v == "key") {
    const int key = c.arg == "enter" ? ImGuiKey_Enter : c.arg == "escape" ? ImGuiKey_Escape : c.arg == "tab" ? ImGuiKey_Tab
                    : c.arg == "backspace" ? ImGuiKey_Backspace : ImGuiKey_A;
    if (phase_ == 0) {
      key_down_ = key;
      ctrl_ = c.arg == "ctrl+a";
      io.KeysDown[io.KeyMap[key]] = true;
      io.KeyCtrl = ctrl_;
      phase_ = 1;
      return false;
    }
    key_down_ = -1;
    ctrl_ = false;
    io.KeysDown[io.KeyMap[key]] = false;
    io.KeyCtrl = false;
    return true;
  }
  if (v == "resize") {
    int w = 0, h = 0;
    if (std::sscanf(c.arg.c_str(), "%dx%d", &w, &h) != 2 || w < 320 || h < 240) {
      fail(c, "not WIDTHxHEIGHT", studio);
      return false;
    }
    if (phase_ == 0) host.resize(w, h);
    return ++phase_ > 5;  // a few frames for the swapchain to follow
  }
  if (v == "drop") {
    studio.drop({fs::path(c.arg)});
    return true;
  }
  if (v == "wait_for") {
    std::istringstream in(c.arg);
    std::string what;
    double limit = 60;
    in >> what >> limit;
    if (condition(what, studio)) return true;
    if (seconds_since(step_started_) > limit) fail(c, "still waiting for " + what + " after " + std::to_string(int(limit)) + " s", studio);
    return false;
  }
  if (v == "frames") return ++phase_ > std::atoi(c.arg.c_str());
  if (v == "sleep") return seconds_since(step_started_) >= std::atof(c.arg.c_str());
  if (v == "screenshot") {
    if (phase_ == 0) {
      host.request_screenshot(c.arg);
      phase_ = 1;
      return false;
    }
    if (!host.screenshot_written(c.arg)) {
      if (seconds_since(step_started_) > 30) fail(c, "the screenshot was not written", studio);
      return false;
    }
    screenshots_.push_back(c.arg);
    return true;
  }
  if (v == "state") {
    write_state(c.arg, studio);
    return true;
  }
  if (v == "quit") {
    studio.request_quit();
    done_ = true;
    return true;
  }
  return true;
}

bool UiScript::condition(const std::string& what, const Studio& studio) const {
  const auto s = studio.state();
  if (what == "model") return s.model_loaded && !s.model_loading;
  if (what == "data") return s.data_loaded && !s.data_loading;
  if (what == "training") return s.train == TrainState::running;
  if (what == "trained") return s.train == TrainState::finished || s.train == TrainState::stopped;
  if (what == "chat_done") return s.chat_turns > 0 && !s.chat_generating;
  if (what == "eval_done") return !s.eval_running && (!s.eval_file.empty() || !s.eval_error.empty());
  if (what.rfind("steps>=", 0) == 0) return s.step >= uint32_t(std::atoi(what.c_str() + 7));
  if (what.rfind("file:", 0) == 0) return fs::exists(what.substr(5));
  // run_metrics:NAME>=N, run_checkpoints:NAME>=N: what the Runs panel has read of a run.
  for (const bool metrics : {true, false}) {
    const std::string prefix = metrics ? "run_metrics:" : "run_checkpoints:";
    if (what.rfind(prefix, 0) != 0) continue;
    const auto ge = what.find(">=");
    if (ge == std::string::npos) return false;
    const std::string name = what.substr(prefix.size(), ge - prefix.size());
    const size_t want = size_t(std::atoll(what.c_str() + ge + 2));
    for (const auto& r : s.runs)
      if (r.name == name && (metrics ? r.metrics : r.checkpoints) >= want) return true;
  }
  return false;
}

void UiScript::fail(const Command& c, const std::string& why, Studio& studio) {
  error_ = source_ + ":" + std::to_string(c.line) + ": " + c.verb + " " + c.arg + ": " + why;
  if (!state_file_.empty()) {
    try {
      write_state(state_file_, studio);
    } catch (const std::exception&) {
    }
  }
  studio.request_quit();
  done_ = true;
}

void UiScript::write_state(const fs::path& file, const Studio& studio) const {
  const auto s = studio.state();
  const auto& f = s.frames;
  nlohmann::json j = {
      {"script_error", error_},
      {"model_loaded", s.model_loaded},
      {"data_loaded", s.data_loaded},
      {"train_state", train_state_name(s.train)},
      {"steps", s.step},
      {"total_steps", s.total},
      {"run_id", s.run_id},
      {"chart_points", s.loss_points},
      {"gpu_groups", s.gpu_groups},
      {"chat_turns", s.chat_turns},
      {"chat_tokens", s.chat_tokens},
      {"reply_base", s.last_reply[kBase]},
      {"reply_adapter", s.last_reply[kTuned]},
      {"reply_base_by", s.last_reply_by[kBase]},
      {"cjk_font", std::string(glyph_report().font)},
      {"glyphs_missing", glyph_report().missing},
      {"reply_adapter_by", s.last_reply_by[kTuned]},
      {"validation_messages", studio.device().validation_messages()},
      {"errors", s.errors},
      {"frames",
       {{"total", f.frames},
        {"drawn", f.drawn},
        {"up_to_date", f.up_to_date},
        {"while_training", f.training_frames},
        {"drawn_while_training", f.training_drawn},
        {"up_to_date_while_training", f.training_up_to_date},
        {"max_frame_ms_while_training", f.max_frame_ms},
        {"its_cpu_wait_ms", f.max_frame_cpu_wait_ms},
        {"max_frame_ms_less_cpu_wait_while_training", f.max_frame_ms_on_cpu},
        {"max_stale_ms_while_training", f.max_stale_ms}}},
      {"screenshots", screenshots_},
      {"eval", {{"running", s.eval_running}, {"rows", s.eval_rows}, {"replies", s.eval_replies}, {"file", s.eval_file},
                {"error", s.eval_error}}}};
  j["runs"] = nlohmann::json::array();
  for (const auto& r : s.runs)
    j["runs"].push_back(
        {{"id", r.id}, {"name", r.name}, {"status", r.status}, {"metrics", r.metrics}, {"checkpoints", r.checkpoints}});
  write_file_atomically(file, j.dump(2) + "\n");
}

}  // namespace ls::ui
