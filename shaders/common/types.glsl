// Storage types vs arithmetic: buffers hold f32, f16 or bf16 (STORE(T)); every kernel computes in
// f32 (TO_F32 on load, FROM_F32 on store). T is a tag passed by the kernel table: f32, f16, bf16.
// bf16 is kept as raw uint16 bits (no bf16 arithmetic is needed, only conversion).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#define LS_CAT_(a, b) a##b
#define LS_CAT(a, b) LS_CAT_(a, b)

#define STORE_f32 float
#define STORE_f16 float16_t
#define STORE_bf16 uint16_t
#define STORE_i32 int

#define TO_F32_f32(v) (v)
#define TO_F32_f16(v) float(v)
#define TO_F32_bf16(v) uintBitsToFloat(uint(v) << 16)

#define FROM_F32_f32(f) (f)
#define FROM_F32_f16(f) float16_t(f)
#define FROM_F32_bf16(f) uint16_t(bf16_bits(f))

#define STORE(T) LS_CAT(STORE_, T)
#define TO_F32(T, v) LS_CAT(TO_F32_, T)(v)
#define FROM_F32(T, f) LS_CAT(FROM_F32_, T)(f)

// Round to nearest even, as torch's float->bfloat16; NaN stays NaN.
uint bf16_bits(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
