#pragma once
// GGUF (llama.cpp's model file, version 3): the value and tensor types shared by the writer and the
// reader. Layout of a file, all little-endian:
//   "GGUF", u32 version 3, u64 tensor count, u64 key-value count
//   key-values: string key, u32 value type, value (arrays: u32 element type, u64 count, elements)
//   tensor infos: string name, u32 dims, u64 ne[dims] (ne[0] varies fastest: torch's shape reversed),
//                 u32 ggml type, u64 offset from the start of the data section (a multiple of the alignment)
//   padding to general.alignment (32 unless the file sets it), then the tensors' data, each padded too.
// Strings are a u64 byte count and UTF-8 bytes, no terminator.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ls::gguf {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT

enum class ValueType : uint32_t { u8 = 0, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

// A metadata value. Arrays of the element types GGUF models use; the variant's alternative is the type
// written, so u32 and i32 stay apart as llama.cpp's typed getters require.
using Value = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, uint64_t,
                           int64_t, double, std::vector<std::string>, std::vector<int32_t>, std::vector<uint32_t>,
                           std::vector<float>, std::vector<uint8_t>, std::vector<int64_t>, std::vector<uint64_t>,
                           std::vector<double>>;

// The ggml tensor types we write or read back (ggml.h's enum ggml_type values).
enum class TensorType : uint32_t {
  f32 = 0, f16 = 1, q4_0 = 2, q5_0 = 6, q8_0 = 8, q4_k = 12, q5_k = 13, q6_k = 14, bf16 = 30
};

struct TypeTraits {
  const char* name;     // as ggml_type_name: "f32", "q8_0", "q4_K"
  uint32_t block;       // elements per block
  uint32_t block_bytes;
};
// nullptr for a type number we do not know.
const TypeTraits* type_traits(uint32_t type);
const TypeTraits& type_traits(TensorType type);

// Bytes of a tensor of `ne` elements per dimension; throws ls::Error when ne[0] is not a multiple of the
// type's block (ggml quantizes rows in whole blocks).
uint64_t tensor_bytes(TensorType type, std::span<const uint64_t> ne, std::string_view name_for_errors);

}  // namespace ls::gguf
