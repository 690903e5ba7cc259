#pragma once
// The UI's settings between launches, kept in the run store's settings table under kSettingsKey as
// JSON: {"train": {option: value, ...}, "chat": {...}, "model": folder, "data": file, "panels": {...}}.
// Window positions live in imgui.ini (ImGui's own). Reading is forgiving: a missing or malformed key
// keeps its default.
#include <filesystem>
#include <string>

#include "ui/views.h"

namespace ls::ui {

inline constexpr const char* kSettingsKey = "ui.settings";

struct PanelsOpen {
  bool model = true, data = true, train = true, charts = true, gpu = true, chat = true, runs = true;
};

struct UiSettings {
  TrainSettings train;
  ChatSettings chat;
  std::filesystem::path model, data;  // the last ones opened
  PanelsOpen panels;
};

std::string settings_json(const UiSettings& s);
// Fills `s` from the JSON text; keys that are absent or of the wrong type are left as they are.
void read_settings(const std::string& json, UiSettings& s);

}  // namespace ls::ui
