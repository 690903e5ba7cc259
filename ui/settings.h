#pragma once
// The UI's settings between launches, kept in the run store's settings table under kSettingsKey as
// JSON: {"train": {option: value, ...}, "chat": {...}, "eval": {...}, "model": folder, "data": file,
// "panels": {...}}.
// Window positions live in imgui.ini (ImGui's own). Reading is forgiving: a missing or malformed key
// keeps its default.
#include <filesystem>
#include <map>
#include <string>

#include "ui/views.h"

namespace ls::ui {

inline constexpr const char* kSettingsKey = "ui.settings";

struct UiSettings {
  TrainSettings train;
  ChatSettings chat;
  EvalSettings eval;  // the Evaluate panel's
  std::filesystem::path model, data;  // the last ones opened
  std::map<std::string, bool> panels;  // open flags by the panel registry's keys (ui/panel_registry.cpp)
};

std::string settings_json(const UiSettings& s);
// Fills `s` from the JSON text; keys that are absent or of the wrong type are left as they are.
void read_settings(const std::string& json, UiSettings& s);

}  // namespace ls::ui
