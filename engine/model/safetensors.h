#pragma once
// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//   8 bytes   N, the header length, u64 little-endian
//   N bytes   header: a JSON object {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//             ..., "__metadata__": {"key": "string", ...} (optional)}, padded with spaces
//   the rest  the data section; a tensor's bytes are [8 + N + begin, 8 + N + end), row-major, little-endian.
// Reading memory-maps the files and validates every header field before any byte is handed out; a bad
// file gives an ls::Error naming the file, the tensor and the problem, never a read out of bounds.
// Gaps in the data section are allowed (the reference library refuses them; we only need the ranges to be
// in the file and not to overlap). Only floating-point tensors (F32, F16, BF16) are accepted on reading.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "util/mapped_file.h"

namespace ls::model {

// One tensor of a (possibly sharded) safetensors model.
struct TensorInfo {
  std::string name;
  DType dtype;                       // f32, f16 or bf16
  std::vector<uint64_t> shape;       // [] is a scalar (one element); a 0 dimension is an empty tensor
  std::span<const std::byte> bytes;  // into the memory map, valid while the SafeTensors lives
  std::filesystem::path file;        // the .safetensors file holding it
  uint64_t numel() const;
  // Its values as f32 (exact for f32, f16 and bf16). Throws ls::Error naming the file and tensor for an
  // integer tensor.
  std::vector<float> values_f32() const;
};

// The tensors of one model, memory-mapped. Move-only; owns the maps.
class SafeTensors {
 public:
  // path: a .safetensors file, a model.safetensors.index.json, or a folder holding model.safetensors or
  // (when that is absent) model.safetensors.index.json. A sharded model opens each shard named by the
  // index's "weight_map" once, and the index must agree with the shards: a tensor listed but absent from
  // its shard, or present in a shard the index does not name for it, is an error; so is a name found in
  // two shards. Shard names must be plain file names beside the index.
  static SafeTensors open(const std::filesystem::path& path);

  const TensorInfo* find(std::string_view name) const;                 // nullptr if absent
  const TensorInfo& at(std::string_view name) const;                   // ls::Error naming the tensor and path if absent
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // sorted by name
  // "__metadata__" of the (first) file
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::filesystem::path& path() const { return path_; }      // as given to open()
  const std::vector<MappedFile>& files() const { return files_; }  // in the order opened

 private:
  std::filesystem::path path_;
  std::vector<MappedFile> files_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Safetensors' dtype name ("F32", "F16", "BF16", "I32").
const char* safetensors_dtype_name(DType t);

struct TensorToWrite {
  std::string name;
  DType dtype;  // f32, f16, bf16 or i32 (written, though open() reads floats only)
  std::vector<uint64_t> shape;
  std::span<const std::byte> bytes;  // numel(shape) * dtype_size(dtype) bytes, row-major, little-endian
};

// Writes a safetensors file byte for byte as the reference library (Rust `safetensors`, behind the Python
// package) does, atomically (ls::write_file_atomically):
//   - tensors ordered by dtype alignment, largest first (F32, I32, BF16, F16: the library's enum order,
//     descending), then by name (bytewise); data offsets follow that order with no gaps;
//   - the header is compact JSON: "__metadata__" first when metadata is not empty (keys sorted; the
//     library keeps a hash map there, so with several keys its order is arbitrary and ours is one of
//     them), then the tensors in data order, each {"dtype","shape","data_offsets"} in that order;
//   - the header is padded with spaces to a multiple of 8 bytes.
// An empty `metadata` writes no "__metadata__" (the library writes `{}` only when given an empty dict).
// Throws ls::Error naming the path and tensor on a byte count that does not match the shape, a duplicate
// name, or the reserved name "__metadata__".
void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A tensor whose bytes are made while its file is written (a merged weight, a copy out of a memory map):
// `write` is called once, in the file's data order, and hands the tensor's numel(shape) * dtype_size(dtype)
// bytes to `sink` in order, in pieces of any size.
using ByteSink = std::function<void(std::span<const std::byte>)>;
struct TensorToStream {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  std::function<void(const ByteSink& sink)> write;
};

// write_safetensors for files too big to build in memory: the same bytes (header, order, padding), written
// a tensor at a time through ls::AtomicFileWriter, so memory use is what the `write` callbacks hold.
// Throws ls::Error naming the path and tensor on what write_safetensors refuses and on a tensor whose
// `write` hands over a different byte count; the file is then left as it was.
void write_safetensors_streamed(const std::filesystem::path& path, std::span<const TensorToStream> tensors,
                                const std::map<std::string, std::string>& metadata = {});

// The bytes write_safetensors() writes (for tests and for callers that stream elsewhere).
std::string serialize_safetensors(std::span<const TensorToWrite> tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  const std::filesystem::path& path_for_errors);

}  // namespace ls::model
