#version 450
#extension GL_GOOGLE_include_directive : require
// y = rows of a quantized weight, dequantized (ops/quant.h: dequantize_forward): y[i] is element
// first + i of the weight flattened, in D (f32, f16 or bf16, rounded to nearest even with integer ops, so
// bit-equal to the host's rounding of ls::dequantize). One thread per element, grid-stride over n.
#include "common/types.glsl"
#include "common/f16_bits.glsl"
layout(local_size_x = 256) in;

layout(push_constant) uniform Params {
  uint first, n;
  float offset;
} p;

#define QB_CODES 0
#define QB_ABSMAX 1
#define QB_SCALES 2
#define QB_MAP 3
#include "common/quant.glsl"

#define BITS_f32 float
#define BITS_f16 uint16_t
#define BITS_bf16 uint16_t
layout(binding = 4) writeonly buffer Y { LS_CAT(BITS_, D) y[]; };

#define OUT_f32(v) (v)
#define OUT_f16(v) uint16_t(f16_from_f32(floatBitsToUint(v)))
#define OUT_bf16(v) uint16_t(bf16_bits(v))

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    const uint e = p.first + i;
    const float v = code_value(e) * block_scale(e >> 6, p.offset);
    y[i] = LS_CAT(OUT_, D)(v);
  }
}
