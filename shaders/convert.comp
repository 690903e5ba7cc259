#version 450
#extension GL_GOOGLE_include_directive : require
// y = x converted from S to D (f32, f16, bf16): through f32, rounding to nearest even as torch does;
// f16 overflow gives inf, subnormals are kept, NaN stays NaN (quiet). COPY (S == D) copies the bits.
// All on the raw bits with integer ops, so the result is the same on every device and bit-equal to
// ls::f32_to_f16 / f32_to_bf16: float16_t() and float moves may flush subnormals, and Vulkan allows a
// round-toward-zero conversion unless the float-controls rounding mode is requested.
// One thread per element, grid-stride over n.
// CONCAT3: y [rows, n0 + n1 + n2] = the columns of x0 [rows, n0], x1 [rows, n1] and x2 [rows, n2] side by side,
// converted the same way (ops::concat_cols_forward: the gradients of q, k and v as one product's operand).
#include "common/types.glsl"
#include "common/f16_bits.glsl"
layout(local_size_x_id = 0) in;

#define BITS_f32 uint
#define BITS_f16 uint16_t
#define BITS_bf16 uint16_t
#define BITS(T) LS_CAT(BITS_, T)

#ifdef CONCAT3
layout(binding = 0) readonly buffer X0 { BITS(S) x0[]; };
layout(binding = 1) readonly buffer X1 { BITS(S) x1[]; };
layout(binding = 2) readonly buffer X2 { BITS(S) x2[]; };
layout(binding = 3) writeonly buffer Y { BITS(D) y[]; };
layout(push_constant) uniform Params { uint rows, n0, n1, n2; } p;
#else
layout(binding = 0) readonly buffer X { BITS(S) x[]; };
layout(binding = 1) writeonly buffer Y { BITS(D) y[]; };
layout(push_constant) uniform Params { uint n; } p;
#endif

// To f32 bits: exact.
uint f32_from_f32(uint u) { return u; }
uint f32_from_bf16(uint b) { return b << 16; }
uint f32_from_f16(uint h) {
  uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 31u) return sign | 0x7f800000u | (m << 13);
  if (e != 0u) return sign | ((e + 112u) << 23) | (m << 13);
  if (m == 0u) return sign;
  int top = findMSB(m);  // subnormal m * 2^-24 = 2^(top - 24) * 1.f: normal in f32
  return sign | (uint(top + 103) << 23) | ((m << uint(23 - top)) & 0x7fffffu);
}

// From f32 bits, rounding to nearest even.
uint bf16_from_f32(uint u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) != 0u) return (u >> 16) | 0x40u;  // quiet NaN
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#ifdef CONCAT3
  const uint cols = p.n0 + p.n1 + p.n2, n = p.rows * cols;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const uint r = i / cols, c = i % cols;
    const uint v = c < p.n0 ? uint(x0[r * p.n0 + c])
                   : c < p.n0 + p.n1 ? uint(x1[r * p.n1 + (c - p.n0)])
                                     : uint(x2[r * p.n2 + (c - p.n0 - p.n1)]);
    y[i] = BITS(D)(LS_CAT(D, _from_f32)(LS_CAT(f32_from_, S)(v)));
  }
#else
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
#ifdef COPY
    y[i] = x[i];
#else
    y[i] = BITS(D)(LS_CAT(D, _from_f32)(LS_CAT(f32_from_, S)(uint(x[i]))));
#endif
  }
#endif
}
