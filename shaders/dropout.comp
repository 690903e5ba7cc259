#version 450
#extension GL_GOOGLE_include_directive : require
// Forward: y = x · keep / (1 − p). BACKWARD: dx = dy · keep / (1 − p), or dx += that when accumulating:
// the forward is linear in x with the diagonal Jacobian keep · scale, so its backward applies the same
// mask to dy. keep for element i: r >= threshold (= ceil(p · 2^32)), r = word i % 4 of
// Philox4x32-10(counter {i / 4, 0, stream, 0}, key {seed[0], seed[1]}) (engine/ops/dropout.h).
// One thread per 4 elements (one Philox call), grid-stride; f32 arithmetic whatever T is.
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE(T) x[]; };  // x, or dy
#ifdef BACKWARD
layout(binding = 1) buffer Y { STORE(T) y[]; };           // dx, read when accumulating
#else
layout(binding = 1) writeonly buffer Y { STORE(T) y[]; };
#endif
layout(binding = 2) readonly buffer Seed { uint seed[]; };  // 2 words the host rewrites between replays
layout(push_constant) uniform Params { uint n; uint stream; uint threshold; float scale; uint accumulate; } p;

// Random123's philox4x32_R(10, counter, key): 10 rounds, the key bumped before each round but the first.
uvec4 philox4x32_10(uvec4 c, uvec2 k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return c;
}

void main() {
  const uvec2 key = uvec2(seed[0], seed[1]);
  const uint quads = (p.n + 3u) / 4u;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < quads; q += stride) {
    const uvec4 r = philox4x32_10(uvec4(q, 0u, p.stream, 0u), key);
    for (uint j = 0u; j < 4u; ++j) {
      const uint i = 4u * q + j;
      if (i >= p.n) break;
      float v = TO_F32(T, x[i]) * (r[j] >= p.threshold ? p.scale : 0.0);
#ifdef BACKWARD
      if (p.accumulate != 0u) v = TO_F32(T, y[i]) + v;
#endif
      y[i] = FROM_F32(T, v);
    }
  }
}
