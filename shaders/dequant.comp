#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// y = rows of a quantized weight, dequantized (ops/quant.h: dequantize_forward): y[i] is element
// first + i of the weight flattened, in D (f32, f16 or bf16, rounded to nearest even with integer ops, so
// bit-equal to the host's rounding of ls::dequantize). A stream at the memory's speed: each invocation
// turns 8 values (one block's, one or two words of codes) into one 16-byte store (32 for f32), grid-stride
// over the groups of 8; when `first` is not a multiple of 8, or for the last n % 8, one value a step.
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

// The output, as single values and as groups of 8 (two views of binding 4): 16-bit values four words a
// group, f32 two vec4 a group.
#define BITS_f16(v) f16_from_f32(floatBitsToUint(v))
#define BITS_bf16(v) bf16_bits(v)
#if !defined(D_F32)
layout(binding = 4) writeonly buffer Y { uint16_t y[]; };
layout(binding = 4) writeonly buffer Y8 { uvec4 y8[]; };
#define BITS(v) LS_CAT(BITS_, D)(v)
#define OUT1(v) uint16_t(BITS(v))
#else
layout(binding = 4) writeonly buffer Y { float y[]; };
layout(binding = 4) writeonly buffer Y8 { vec4 y8[]; };
#define OUT1(v) (v)
#endif

void main() {
  quant_init();
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint groups = (p.first & 7u) == 0u ? p.n / 8u : 0u;
  for (uint g = gl_GlobalInvocationID.x; g < groups; g += stride) {
    const uint e = p.first + 8u * g;
    float v[8];
    code_values8(e / 8u * kQuantWordsPer8, v);
    const float s = block_scale(e >> 6, p.offset);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] *= s;
#if defined(D_F32)
    y8[2u * g] = vec4(v[0], v[1], v[2], v[3]);
    y8[2u * g + 1u] = vec4(v[4], v[5], v[6], v[7]);
#else
    uvec4 h;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) h[j] = BITS(v[2u * j]) | (BITS(v[2u * j + 1u]) << 16);
    y8[g] = h;
#endif
  }
  for (uint i = 8u * groups + gl_GlobalInvocationID.x; i < p.n; i += stride) {
    const uint e = p.first + i;
    const float v = code_value(e) * block_scale(e >> 6, p.offset);
    y[i] = OUT1(v);
  }
}
