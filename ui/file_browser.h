#pragma once
// A file and folder chooser drawn with ImGui: a path field (type or paste a path; Enter opens it), the
// folder's entries (folders first; click selects, double-click enters a folder or picks a file), Up,
// and Open / Cancel. The folder is read only when it changes. Items are tagged "browser.*" for the
// --ui-script driver.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ui/panel_io.h"

namespace ls::ui {

class FileBrowser {
 public:
  enum class Pick { folder, file, new_folder };  // new_folder: a folder that may not exist yet

  void open(std::string title, Pick pick, const std::filesystem::path& start, std::string extension = "");
  bool is_open() const { return open_; }
  // Draws the modal while open; returns the chosen path once, when the user picks it.
  std::optional<std::filesystem::path> draw(PanelIo& io);

 private:
  struct Entry {
    std::string name;
    bool folder = false;
  };
  void enter(const std::filesystem::path& dir);
  std::optional<std::filesystem::path> accept(const std::filesystem::path& p);

  std::string title_;
  Pick pick_ = Pick::file;
  std::string extension_;
  bool open_ = false, opening_ = false;
  std::filesystem::path dir_;
  std::string path_text_, error_;
  std::vector<Entry> entries_;
  int selected_ = -1;
};

}  // namespace ls::ui
