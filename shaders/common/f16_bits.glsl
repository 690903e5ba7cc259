#ifndef LS_F16_BITS_GLSL
#define LS_F16_BITS_GLSL
// f32 bits to f16 bits, rounding to nearest even with integer ops (as ls::f32_to_f16): the same on every
// device, where float16_t() may flush subnormals or round toward zero.
uint f16_from_f32(uint u) {  // as ls::f32_to_f16
  uint sign = (u >> 16) & 0x8000u, exponent = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
  if (exponent == 0xffu) return sign | 0x7c00u | (mant != 0u ? 0x200u : 0u);
  int e = int(exponent) - 127 + 15;
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {  // a subnormal half, or zero
    if (e < -10) return sign;
    mant |= 0x800000u;
    uint shift = uint(14 - e);
    uint h = mant >> shift, rest = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (h & 1u) != 0u)) ++h;
    return sign | h;
  }
  uint h = (uint(e) << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) ++h;  // a carry into the exponent is right too
  return sign | h;
}
#endif  // LS_F16_BITS_GLSL
