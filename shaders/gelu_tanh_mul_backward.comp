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
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { STORE(T) dy[]; };
layout(binding = 1) readonly buffer Gate { STORE(T) gate[]; };
layout(binding = 2) readonly buffer Up { STORE(T) up[]; };
layout(binding = 3) writeonly buffer DGate { STORE_OUT dgate[]; };
layout(binding = 4) writeonly buffer DUp { STORE_OUT dup[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    float g = TO_F32(T, gate[i]), u = TO_F32(T, up[i]), d = TO_F32(T, dy[i]);
    float t = tanh_safe(kBeta * (g + kKappa * g * g * g));
    float dgelu = 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * kBeta * (1.0 + 3.0 * kKappa * g * g);
    dgate[i] = OUT(d * u * dgelu);
    dup[i] = OUT(d * 0.5 * g * (1.0 + t));
  }
}
