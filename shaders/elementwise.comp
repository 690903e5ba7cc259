#version 450
#extension GL_GOOGLE_include_directive : require
// OP_ADD: y = a + b; OP_SCALE: y = s * a. One thread per element, grid-stride over n.
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer A { STORE(T) a[]; };
#ifdef OP_ADD
layout(binding = 1) readonly buffer B { STORE(T) b[]; };
layout(binding = 2) writeonly buffer Y { STORE(T) y[]; };
#else
layout(binding = 1) writeonly buffer Y { STORE(T) y[]; };
#endif
layout(push_constant) uniform Params { uint n; float s; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
#ifdef OP_ADD
    y[i] = FROM_F32(T, TO_F32(T, a[i]) + TO_F32(T, b[i]));
#else
    y[i] = FROM_F32(T, p.s * TO_F32(T, a[i]));
#endif
  }
}
