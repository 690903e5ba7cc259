#version 450
#extension GL_GOOGLE_include_directive : require
// y = gelu_tanh(gate) * up (Gemma's MLP: transformers' gelu_pytorch_tanh), with
//   gelu_tanh(g) = 0.5 * g * (1 + tanh(sqrt(2/pi) * (g + 0.044715 * g^3))).
// One thread per element, grid-stride over n.
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
    y[i] = OUT(gelu_tanh(g) * TO_F32(T, up[i]));
  }
}
