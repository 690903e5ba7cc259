#pragma once
// Writes a GGUF file (layout in gguf_types.h): metadata in the order set, then tensors in the order
// added, each tensor's data streamed from a callback so that no model has to fit in memory. The file is
// written to a temporary name, fsynced and renamed (ls::AtomicFileWriter): readers never see a part.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/gguf_types.h"

namespace ls::gguf {

using ByteSink = std::function<void(std::span<const std::byte>)>;

struct TensorToWrite {
  std::string name;
  TensorType type;
  std::vector<uint64_t> ne;                         // ggml order: ne[0] is the row (torch's last dimension)
  std::function<void(const ByteSink& sink)> write;  // hands over exactly tensor_bytes(type, ne) bytes, in order
};

// Bytes of tensor data written so far and in all (for a progress bar).
using Progress = std::function<void(uint64_t done, uint64_t total)>;

class Writer {
 public:
  // Sets (or replaces, keeping its place) a metadata key.
  void set(const std::string& key, Value value);
  const Value* find(const std::string& key) const;
  // Throws ls::Error on a duplicate name or a shape that is not whole blocks of the type.
  void add_tensor(TensorToWrite tensor);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file; throws ls::Error naming the path (and the tensor) when a write fails or a tensor's
  // callback hands over a different number of bytes, and then leaves `path` as it was.
  void write(const std::filesystem::path& path, const Progress& progress = {}) const;

 private:
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorToWrite> tensors_;
};

}  // namespace ls::gguf
