// ROUND_TO(T, f): f rounded to the storage type T and read back, the value a store of FROM_F32(T, f) then a load gives,
// with integer arithmetic: a driver may fold a float -> float16_t -> float round trip in registers away (NVIDIA's did,
// session 38: the GLU epilogue and the RoPE reduce then rounded nothing). Needs common/types.glsl.
#ifndef LS_ROUND_TO_GLSL
#define LS_ROUND_TO_GLSL
#include "common/f16_bits.glsl"

float round_to_f16(float f) { return unpackHalf2x16(f16_from_f32(floatBitsToUint(f))).x; }
#define ROUND_TO_f32(f) (f)
#define ROUND_TO_f16(f) round_to_f16(f)
#define ROUND_TO_bf16(f) uintBitsToFloat(bf16_bits(f) << 16)
#define ROUND_TO(T, f) LS_CAT(ROUND_TO_, T)(f)
#endif  // LS_ROUND_TO_GLSL
