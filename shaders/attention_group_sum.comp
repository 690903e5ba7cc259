#version 450
#extension GL_GOOGLE_include_directive : require
// Grouped-query attention's key/value gradients from per-query-head ones, and the flash backward's split
// partials (ops/attention_flash.cpp):
//   y[b, j, g, d] = Σ_{s < slices} Σ_{i < G} x[s, b, g·G + i, j, d]
//   x [slices, B, H, T, D] (H = KV·G), y [B, T, KV, D], f32.
#include "common/types.glsl"
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint total;  // B·T·KV·D
  uint T, KV, D, G;
  uint slices;
} p;

void main() {
  for (uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u; i < p.total;
       i += gl_NumWorkGroups.x * gl_NumWorkGroups.y * 256u) {
    const uint d = i % p.D, g = (i / p.D) % p.KV, j = (i / (p.D * p.KV)) % p.T, b = i / (p.D * p.KV * p.T);
    const uint H = p.KV * p.G, B = p.total / (p.T * p.KV * p.D);
    float s = 0.0;
    for (uint sl = 0u; sl < p.slices; ++sl)
      for (uint q = 0u; q < p.G; ++q) s += x[(((sl * B + b) * H + g * p.G + q) * p.T + j) * p.D + d];
    y[i] = s;
  }
}
