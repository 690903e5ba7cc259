#pragma once
// Small helpers the panels share: tooltips, number formats, colours of the theme.
#include <cstdint>
#include <string>

#include <imgui.h>

namespace ls::ui {

// "1.5 GiB", "300 MiB", "12 KiB", "512 B".
std::string format_bytes(uint64_t bytes);
// "1:02:03" or "2:03".
std::string format_duration(double seconds);
// "1,234,567".
std::string format_count(uint64_t n);
// "11-25 14:03": a time (seconds since 1970) as the local month, day, hour and minute.
std::string format_local_time(double unix_seconds);
// Shows `text` as a tooltip when the last item is hovered.
void tooltip(const char* text);
// A section title: brighter text and a separator.
void heading(const char* text);

// After an item: ImGui::SameLine() when an item `next_width` wide still fits on this line, else nothing (the
// next item starts a line), so that a row of buttons or checkboxes wraps in a narrow panel.
void same_line_if_fits(float next_width);
// The widths same_line_if_fits takes: a button's, a checkbox's (box and label).
float button_width(const char* label);
float checkbox_width(const char* label);

// Theme colours.
inline const ImVec4 kDim{0.62f, 0.65f, 0.70f, 1.0f};
inline const ImVec4 kGood{0.45f, 0.82f, 0.52f, 1.0f};
inline const ImVec4 kWarn{0.98f, 0.76f, 0.35f, 1.0f};
inline const ImVec4 kBad{1.0f, 0.45f, 0.40f, 1.0f};
inline const ImVec4 kAccent{0.40f, 0.68f, 1.0f, 1.0f};

}  // namespace ls::ui
