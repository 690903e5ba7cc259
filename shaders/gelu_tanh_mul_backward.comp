#version 450
#extension GL_GOOGLE_include_directive : require
// Backward of y = gelu_tanh(g) * u, with t = tanh(sqrt(2/pi) * (g + 0.044715 g^3)):
//   dup = dy * gelu_tanh(g) = dy * 0.5 * g * (1 + t),
//   dgate = dy * u * (0.5 * (1 + t) + 0.5 * g * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 * g^2)).
// One thread per element, grid-stride over n. Each thread reads its inputs before writing, so dgate
// may alias gate and dup may alias up.
#include "common/types.glsl"
#include "common/activation_out.glsl"
#include "common/glu.glsl"
#ifdef V8
#include "common/f16x8.glsl"
#endif
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { STORE(T) dy[]; };
layout(binding = 1) readonly buffer Gate { STORE(T) gate[]; };
layout(binding = 2) readonly buffer Up { STORE(T) up[]; };
layout(binding = 3) writeonly buffer DGate { STORE_OUT dgate[]; };
layout(binding = 4) writeonly buffer DUp { STORE_OUT dup[]; };
layout(push_constant) uniform Params { uint n; } p;
#ifdef V8
layout(binding = 0) readonly buffer DY8 { uvec4 dy8[]; };
layout(binding = 1) readonly buffer Gate8 { uvec4 gate8[]; };
layout(binding = 2) readonly buffer Up8 { uvec4 up8[]; };
layout(binding = 3) writeonly buffer DGate8 { uvec4 dgate8[]; };
layout(binding = 4) writeonly buffer DUp8 { uvec4 dup8[]; };
#endif

// (dgate, dup) of one element from dy, gate and up (common/glu.glsl): both loops below call it.
vec2 grads(const in float d, const in float g, const in float u) { return gelu_tanh_mul_grads(d, g, u); }

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint first = 0u;  // the first element of the one-a-thread loop
#ifdef V8
  const uint n8 = p.n / 8u;
  for (uint j = gl_GlobalInvocationID.x; j < n8; j += stride) {
    const uvec4 d8 = dy8[j], g8 = gate8[j], u8 = up8[j];
    uvec4 rg, ru;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      const vec2 d = v8_pair(d8, c), g = v8_pair(g8, c), u = v8_pair(u8, c);
      const vec2 a = grads(d.x, g.x, u.x), b = grads(d.y, g.y, u.y);
      rg[c] = v8_pack(a.x, b.x);
      ru[c] = v8_pack(a.y, b.y);
    }
    dgate8[j] = rg;
    dup8[j] = ru;
  }
  first = n8 * 8u;
#endif
  for (uint i = first + gl_GlobalInvocationID.x; i < p.n; i += stride) {
    const vec2 r = grads(TO_F32(T, dy[i]), TO_F32(T, gate[i]), TO_F32(T, up[i]));
    dgate[i] = OUT(r.x);
    dup[i] = OUT(r.y);
  }
}
