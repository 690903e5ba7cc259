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

// (sin a, cos a) to about 1 ulp for |a| < 2^22, the same on every device. GLSL's sin/cos only promise
// 2^-11 absolute error, and only inside [-pi, pi]; HF's angles reach the context length.
// a = k pi/2 + r with |r| <= pi/4 (Cody-Waite): pi/2 = C1 + C2 + C3 where C1, C2 have 13 significant
// bits and k = kh + kl with 11 significant bits each, so every k*C1 and k*C2 product is exact.
// `precise` keeps the compiler from fusing or reordering these steps. Then Cephes' sinf/cosf
// polynomials on [-pi/4, pi/4] and the quadrant k mod 4.
vec2 sin_cos(float a) {
  const float C1 = 1.570556640625, C2 = 2.396702766418457e-4, C3 = 1.5893254712295857e-08;
  precise float k = roundEven(a * 0.63661977236758134);  // 2 / pi
  precise float kh = 2048.0 * trunc(k * (1.0 / 2048.0));
  precise float kl = k - kh;
  precise float r = a - kh * C1;
  r = r - kl * C1;
  r = r - kh * C2;
  r = r - kl * C2;
  r = r - k * C3;
  float z = r * r;
  float s = r + r * z * ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1);
  float c = 1.0 - 0.5 * z + z * z * ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2);
  int q = int(k) & 3;
  if (q == 0) return vec2(s, c);
  if (q == 1) return vec2(c, -s);
  if (q == 2) return vec2(-s, -c);
  return vec2(-c, s);
}

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
    float x0 = TO_F32(T, x[lo]), x1 = TO_F32(T, x[hi]);
    y[lo] = FROM_F32(T, x0 * sc.y - x1 * sc.x);
    y[hi] = FROM_F32(T, x1 * sc.y + x0 * sc.x);
  }
}
