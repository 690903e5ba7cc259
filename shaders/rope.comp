#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding, HF Qwen2/Llama rotate_half convention, on rows of D = 2h values (one row
// per token and head). For pair i < h of a row of token t: a = f32(pos[t]) * inv_freq[i], one f32
// rounding as in HF, and
//   forward:            y[i]  = x[i] cos a - x[i+h] sin a,    y[i+h]  = x[i+h] cos a + x[i] sin a
//   BACKWARD (R(-a)):   dx[i] = dy[i] cos a + dy[i+h] sin a,  dx[i+h] = dy[i+h] cos a - dy[i] sin a
// (x, y name the input and output of either direction.) One thread per pair, grid-stride. A thread
// reads both halves of its pair before writing them, so y may alias x.
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE(T) x[]; };
layout(binding = 1) readonly buffer Positions { int pos[]; };
layout(binding = 2) readonly buffer InvFreq { float inv_freq[]; };
layout(binding = 3) writeonly buffer Y { STORE(T) y[]; };
layout(push_constant) uniform Params {
  uint pairs;   // tokens * heads * h
  uint half_d;  // h = D / 2
  uint heads;
} p;

#include "common/rope_angle.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint j = gl_GlobalInvocationID.x; j < p.pairs; j += stride) {
    uint i = j % p.half_d;
    uint row = j / p.half_d;  // token * heads + head
    precise float a = float(pos[row / p.heads]) * inv_freq[i];
    vec2 sc = sin_cos(a);
#ifdef BACKWARD
    sc.x = -sc.x;
#endif
    uint lo = row * 2u * p.half_d + i, hi = lo + p.half_d;
    const vec2 r = rope_rotate(TO_F32(T, x[lo]), TO_F32(T, x[hi]), sc);
    y[lo] = FROM_F32(T, r.x);
    y[hi] = FROM_F32(T, r.y);
  }
}
