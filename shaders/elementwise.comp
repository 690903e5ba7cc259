#version 450
#extension GL_GOOGLE_include_directive : require
// OP_ADD: y = a + b; OP_SCALE: y = s * a; OP_SOFTCAP: y = s * tanh(a / s) (Gemma 3's final logit
// softcapping). One thread per element, grid-stride over n.
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

#ifdef OP_SOFTCAP
// tanh without overflow (exp only sees -2|u|) and without the cancellation of 1 - exp(-2|u|) near 0, where
// the Taylor series to u^7 is exact in f32 (|u| < 0.1: the next term is below 2e-11 relative).
float tanh_accurate(float u) {
  float a = abs(u);
  float t;
  if (a < 0.1) {
    float a2 = a * a;
    t = a * (1.0 + a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0))));
  } else {
    float e = exp(-2.0 * a);
    t = (1.0 - e) / (1.0 + e);
  }
  return u >= 0.0 ? t : -t;
}
#endif

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
#if defined(OP_ADD)
    y[i] = FROM_F32(T, TO_F32(T, a[i]) + TO_F32(T, b[i]));
#elif defined(OP_SOFTCAP)
    y[i] = FROM_F32(T, p.s * tanh_accurate(TO_F32(T, a[i]) / p.s));
#else
    y[i] = FROM_F32(T, p.s * TO_F32(T, a[i]));
#endif
  }
}
