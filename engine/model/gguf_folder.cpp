#include "model/gguf_folder.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "error.h"
#include "util/atomic_file.h"

namespace ls::model {

namespace fs = std::filesystem;

namespace {
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

GgufFolder export_gguf_folder(const fs::path& model_dir, const fs::path& adapter_dir, const fs::path& dir,
                              GgufFileType type, bool overwrite, const GgufFolderProgress& progress) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error(dir.string() + ": exists and is not a folder");
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec) && !overwrite)
    throw Error(dir.string() + ": exists and is not empty (--force rewrites the files export --gguf writes there)");
  // The outermost folder this call creates (none when dir exists): removed again when the export stops before
  // any file is written, so that a refused export leaves the disk as it was.
  fs::path created;
  for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    if (p.has_filename()) created = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create (" + ec.message() + ")");

  GgufFolder f{.adapter = dir / "adapter.gguf",
               .model = dir / ("model-" + std::string(gguf_file_type_name(type)) + ".gguf"),
               .modelfile = dir / "Modelfile"};
  auto progress_of = [&](const fs::path& file) -> gguf::Progress {
    if (!progress) return {};
    progress(file, 0, 0);
    return [&progress, file](uint64_t done, uint64_t total) { progress(file, done, total); };
  };
  // Each file is replaced whole or not at all (util/atomic_file.h); one that cannot be written (a full disk)
  // stops the export, saying which files are new and which are as they were.
  std::vector<std::string> done;
  auto write = [&](const fs::path& file, const std::function<void()>& make) {
    try {
      make();
    } catch (const Error& e) {
      if (done.empty() && !created.empty()) {
        std::error_code ignored;
        fs::remove_all(created, ignored);
        throw;  // nothing was written, and nothing is left
      }
      std::string kept = file.filename().string();
      for (const fs::path& later : {f.adapter, f.model, f.modelfile})
        if (later != file && std::find(done.begin(), done.end(), later.filename().string()) == done.end())
          kept += ", " + later.filename().string();
      throw Error(std::string(e.what()) + "; export --gguf stopped: " +
                  (done.empty() ? "" : "written anew: " + join(done) + "; ") + "left as they were: " + kept);
    }
    done.push_back(file.filename().string());
  };
  write(f.adapter, [&] { export_adapter_gguf(model_dir, adapter_dir, f.adapter, progress_of(f.adapter)); });
  write(f.model, [&] { f.notes = export_merged_gguf(model_dir, adapter_dir, f.model, type, progress_of(f.model)); });
  // Ollama resolves FROM and ADAPTER paths against the Modelfile's folder.
  write(f.modelfile, [&] {
    write_file_atomically(f.modelfile,
                          "# ollama create NAME -f " + f.modelfile.string() +
                              "\n# The model with the adapter merged in; its chat template is in the GGUF.\n"
                              "FROM ./" + f.model.filename().string() +
                              "\n# Or the base model with the adapter on top: FROM a GGUF of the same base model, then\n"
                              "# ADAPTER ./adapter.gguf\n");
  });
  return f;
}

}  // namespace ls::model
