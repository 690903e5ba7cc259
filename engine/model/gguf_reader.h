#pragma once
// Reads a GGUF file (layout in gguf_types.h) through a memory map: its metadata and its tensors' bytes.
// For checking what we wrote and for reading llama.cpp's own files; every bound is checked, and a file
// that breaks one throws ls::Error naming the path, the byte offset and what is wrong.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/gguf_types.h"
#include "util/mapped_file.h"

namespace ls::gguf {

struct TensorInfo {
  std::string name;
  uint32_t type = 0;  // ggml_type number (TensorType when we know it)
  std::vector<uint64_t> ne;
  std::span<const std::byte> bytes;  // into the map; empty for a type we do not know
};

class Reader {
 public:
  static Reader open(const std::filesystem::path& path);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }  // in file order
  const Value* find(const std::string& key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(const std::string& name) const;
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  explicit Reader(MappedFile file) : file_(std::move(file)) {}
  MappedFile file_;
  uint32_t version_ = 0, alignment_ = kAlignment;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace ls::gguf
