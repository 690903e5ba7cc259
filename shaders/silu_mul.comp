#version 450
#extension GL_GOOGLE_include_directive : require
// y = silu(gate) * up, silu(g) = g * sigmoid(g). One thread per element, grid-stride over n.
#include "common/types.glsl"
#include "common/activation_out.glsl"
#include "common/glu.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Gate { STORE(T) gate[]; };
layout(binding = 1) readonly buffer Up { STORE(T) up[]; };
layout(binding = 2) writeonly buffer Y { STORE_OUT y[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    float g = TO_F32(T, gate[i]);
    y[i] = OUT(silu(g) * TO_F32(T, up[i]));
  }
}
