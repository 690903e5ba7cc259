#version 450
#extension GL_GOOGLE_include_directive : require
// Backward of y = silu(g) * u, with s = sigmoid(g):
//   dup = dy * silu(g) = dy * g * s,   dgate = dy * u * s * (1 + g * (1 - s)).
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
    float s = sigmoid(g);
    dgate[i] = OUT(d * u * s * (1.0 + g * (1.0 - s)));
    dup[i] = OUT(d * g * s);
  }
}
