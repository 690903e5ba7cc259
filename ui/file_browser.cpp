#include "ui/file_browser.h"

#include <algorithm>
#include <system_error>

#include <imgui.h>
#include <imgui_stdlib.h>

namespace ls::ui {

namespace fs = std::filesystem;

void FileBrowser::open(std::string title, Pick pick, const fs::path& start, std::string extension) {
  title_ = std::move(title) + "###file-browser";
  pick_ = pick;
  extension_ = std::move(extension);
  open_ = opening_ = true;
  error_.clear();
  std::error_code ec;
  fs::path p = start.empty() ? fs::current_path(ec) : start;
  if (fs::is_directory(p, ec)) {
    enter(p);
  } else {
    enter(p.has_parent_path() && fs::is_directory(p.parent_path(), ec) ? p.parent_path() : fs::current_path(ec));
    if (!start.empty()) path_text_ = start.string();
  }
}

void FileBrowser::enter(const fs::path& dir) {
  std::error_code ec;
  dir_ = fs::absolute(dir, ec).lexically_normal();
  if (dir_.has_filename() == false && dir_ != dir_.root_path()) dir_ = dir_.parent_path();
  path_text_ = dir_.string();
  entries_.clear();
  selected_ = -1;
  for (fs::directory_iterator it(dir_, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    const bool folder = it->is_directory(ec);
    if (!folder && (pick_ != Pick::file || (!extension_.empty() && it->path().extension() != extension_))) continue;
    entries_.push_back({name, folder});
  }
  if (ec) error_ = dir_.string() + ": " + ec.message();
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.folder != b.folder ? a.folder : a.name < b.name;
  });
}

// The path the user confirmed: picked if it fits, entered if it is a folder while a file is wanted.
std::optional<fs::path> FileBrowser::accept(const fs::path& p) {
  std::error_code ec;
  error_.clear();
  if (fs::is_directory(p, ec)) {
    if (pick_ == Pick::file) {
      enter(p);
      return std::nullopt;
    }
    return p;
  }
  if (pick_ == Pick::file && fs::is_regular_file(p, ec)) return p;
  if (pick_ == Pick::new_folder && !fs::exists(p, ec) && fs::is_directory(p.parent_path(), ec)) return p;
  error_ = p.string() + (pick_ == Pick::file ? ": no such file" : ": no such folder");
  return std::nullopt;
}

std::optional<fs::path> FileBrowser::draw(PanelIo& io) {
  if (!open_) return std::nullopt;
  if (opening_) {
    ImGui::OpenPopup(title_.c_str());
    opening_ = false;
  }
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize({display.x * 0.6f, display.y * 0.7f}, ImGuiCond_Appearing);
  ImGui::SetNextWindowPos({display.x * 0.5f, display.y * 0.5f}, ImGuiCond_Appearing, {0.5f, 0.5f});
  std::optional<fs::path> chosen;
  if (!ImGui::BeginPopupModal(title_.c_str(), &open_)) return std::nullopt;

  if (ImGui::Button("Up")) enter(dir_.parent_path());
  io.tag("browser.up");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputText("##path", &path_text_, ImGuiInputTextFlags_EnterReturnsTrue)) chosen = accept(path_text_);
  io.tag("browser.path");

  const float footer = ImGui::GetFrameHeightWithSpacing() * (error_.empty() ? 1.2f : 2.2f);
  if (ImGui::BeginChild("entries", {0, -footer}, true)) {
    for (int i = 0; i < int(entries_.size()); ++i) {
      const Entry& e = entries_[size_t(i)];
      const std::string label = (e.folder ? "[dir]  " : "       ") + e.name;
      if (ImGui::Selectable(label.c_str(), selected_ == i, ImGuiSelectableFlags_AllowDoubleClick)) {
        selected_ = i;
        path_text_ = (dir_ / e.name).string();
        if (ImGui::IsMouseDoubleClicked(0)) {
          if (e.folder) {
            enter(dir_ / e.name);
            break;
          }
          chosen = accept(dir_ / e.name);
        }
      }
    }
    if (entries_.empty()) ImGui::TextDisabled(pick_ == Pick::file ? "(no folders or %s files here)" : "(no folders here)",
                                              extension_.empty() ? "" : extension_.c_str());
  }
  ImGui::EndChild();
  if (!error_.empty()) ImGui::TextColored({1.0f, 0.45f, 0.4f, 1.0f}, "%s", error_.c_str());
  const char* verb = pick_ == Pick::new_folder ? "Save here" : "Open";
  if (ImGui::Button(verb, {ImGui::GetFontSize() * 7, 0})) chosen = accept(path_text_);
  io.tag("browser.open");
  ImGui::SameLine();
  if (ImGui::Button("Cancel", {ImGui::GetFontSize() * 7, 0})) open_ = false;
  io.tag("browser.cancel");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", pick_ == Pick::file ? "pick a file" : "pick a folder (Open picks the one in the field)");
  if (chosen) open_ = false;
  if (!open_) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
  return chosen;
}

}  // namespace ls::ui
