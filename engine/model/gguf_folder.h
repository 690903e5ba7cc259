#pragma once
// What `lorastudio export --gguf DIR` and the app's "Export GGUF..." write for llama.cpp, Ollama and LM Studio:
// DIR/adapter.gguf (the adapter as a GGUF LoRA), DIR/model-<type>.gguf (the base with the adapter merged in,
// with its tokenizer and chat template) and DIR/Modelfile (`ollama create NAME -f DIR/Modelfile`).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/gguf_export.h"

namespace ls::model {

struct GgufFolder {
  std::filesystem::path adapter, model, modelfile;  // the files written
  std::vector<std::string> notes;                   // export_merged_gguf's, for the user
};

// Progress of one file being written: its path, bytes done and total; (file, 0, 0) when the file starts.
using GgufFolderProgress = std::function<void(const std::filesystem::path& file, uint64_t done, uint64_t total)>;

// dir must be absent or an empty folder unless overwrite (then the three files are rewritten, others kept);
// ls::Error naming dir otherwise, before anything is written. Each file is written atomically. When the export
// stops before its first file is written (a model GGUF cannot express), the folders it created are removed
// again and a folder that was there is left as it was.
GgufFolder export_gguf_folder(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
                              const std::filesystem::path& dir, GgufFileType type, bool overwrite = false,
                              const GgufFolderProgress& progress = {});

}  // namespace ls::model
