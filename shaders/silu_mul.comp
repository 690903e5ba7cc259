#version 450
#extension GL_GOOGLE_include_directive : require
// y = silu(gate) * up, silu(g) = g * sigmoid(g). One thread per element, grid-stride over n.
#include "common/types.glsl"
#include "common/activation_out.glsl"
#include "common/glu.glsl"
#ifdef V8
#include "common/f16x8.glsl"
#endif
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Gate { STORE(T) gate[]; };
layout(binding = 1) readonly buffer Up { STORE(T) up[]; };
layout(binding = 2) writeonly buffer Y { STORE_OUT y[]; };
layout(push_constant) uniform Params { uint n; } p;
#ifdef V8
layout(binding = 0) readonly buffer Gate8 { uvec4 gate8[]; };
layout(binding = 1) readonly buffer Up8 { uvec4 up8[]; };
layout(binding = 2) writeonly buffer Y8 { uvec4 y8[]; };
#endif

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint first = 0u;  // the first element of the one-a-thread loop
#ifdef V8
  const uint n8 = p.n / 8u;
  for (uint j = gl_GlobalInvocationID.x; j < n8; j += stride) {
    const uvec4 g8 = gate8[j], u8 = up8[j];
    uvec4 r;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      const vec2 g = v8_pair(g8, c), u = v8_pair(u8, c);
      r[c] = v8_pack(silu(g.x) * u.x, silu(g.y) * u.y);
    }
    y8[j] = r;
  }
  first = n8 * 8u;
#endif
  for (uint i = first + gl_GlobalInvocationID.x; i < p.n; i += stride) {
    float g = TO_F32(T, gate[i]);
    y[i] = OUT(silu(g) * TO_F32(T, up[i]));
  }
}
