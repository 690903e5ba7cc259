#pragma once
// Element types of tensors and their host-side conversions (round to nearest even, as torch does).
#include <cstddef>
#include <cstdint>
#include <string>

namespace ls {

enum class DType : uint8_t { f32, f16, bf16, i32 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);
// f rounded through the dtype and back: what the GPU sees after an upload.
float round_to(DType t, float f);
// Element i of packed `dtype` values (safetensors data, downloads) as f32; 0 for i32.
float load_as_f32(const std::byte* data, DType dtype, size_t i);
// f stored as element i of packed `dtype` values (f16/bf16 rounded to nearest even); nothing for i32.
void store_from_f32(std::byte* data, DType dtype, size_t i, float f);

}  // namespace ls
