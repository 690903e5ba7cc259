#include "tensor/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace ls {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = int(exp) - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is still right
  return uint16_t(sign | h);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

float round_to(DType t, float f) {
  switch (t) {
    case DType::f16: return f16_to_f32(f32_to_f16(f));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(f));
    default: return f;
  }
}

float load_as_f32(const std::byte* data, DType dtype, size_t i) {
  float f;
  uint16_t h;
  switch (dtype) {
    case DType::f32: std::memcpy(&f, data + 4 * i, 4); return f;
    case DType::f16: std::memcpy(&h, data + 2 * i, 2); return f16_to_f32(h);
    case DType::bf16: std::memcpy(&h, data + 2 * i, 2); return bf16_to_f32(h);
    case DType::i32: break;
  }
  return 0;
}

void store_from_f32(std::byte* data, DType dtype, size_t i, float f) {
  uint16_t h;
  switch (dtype) {
    case DType::f32: std::memcpy(data + 4 * i, &f, 4); return;
    case DType::f16: h = f32_to_f16(f); std::memcpy(data + 2 * i, &h, 2); return;
    case DType::bf16: h = f32_to_bf16(f); std::memcpy(data + 2 * i, &h, 2); return;
    case DType::i32: return;
  }
}

}  // namespace ls
