#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE and the KV-cache write of inference in one pass (ops/rope.h rope_kv_cache_forward): q rotated in place,
// k rotated into the k cache, v copied into the v cache, token t at cache row offsets[slot] + t (slot < 0: t).
// With seq_tokens > 0 the tokens are sequences of seq_tokens each (batched generation), each with a cache of
// its own: token t = b·seq_tokens + i goes to row offsets[slot + b] + i of cache b.
// The rotation is shaders/rope.comp's, bit for bit (the same angle, sin_cos and expressions); rows past the
// cache's end are skipped, as ops/copy_rows does. One thread per pair of a q or k row (and the v values at the
// same places), grid-stride.
#include "common/types.glsl"
#include "common/rope_angle.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) buffer Q { STORE(T) q[]; };
layout(binding = 1) readonly buffer K { STORE(T) k[]; };
layout(binding = 2) readonly buffer V { STORE(T) v[]; };
layout(binding = 3) readonly buffer Positions { int pos[]; };
layout(binding = 4) readonly buffer InvFreq { float inv_freq[]; };
layout(binding = 5) writeonly buffer KCache { STORE(T) k_cache[]; };
layout(binding = 6) writeonly buffer VCache { STORE(T) v_cache[]; };
layout(binding = 7) readonly buffer Offsets { int offsets[]; };
layout(push_constant) uniform Params {
  uint tokens;
  uint heads, kv_heads;
  uint half_d;      // h = D / 2
  uint cache_rows;  // S, the rows of a (sequence's) cache
  int slot;
  uint seq_tokens;  // 0: one sequence
} p;

void main() {
  const uint per_token = (p.heads + p.kv_heads) * p.half_d;
  const uint total = p.tokens * per_token;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint j = gl_GlobalInvocationID.x; j < total; j += stride) {
    const uint t = j / per_token, r = j % per_token;
    const uint b = p.seq_tokens != 0u ? t / p.seq_tokens : 0u, row = p.seq_tokens != 0u ? t % p.seq_tokens : t;
    const uint d0 = p.slot >= 0 ? uint(max(offsets[p.slot + int(b)], 0)) : 0u;
    const uint h = r / p.half_d, i = r % p.half_d;
    precise float a = float(pos[t]) * inv_freq[i];
    vec2 sc = sin_cos(a);
    if (h < p.heads) {
      uint lo = (t * p.heads + h) * 2u * p.half_d + i, hi = lo + p.half_d;
      float x0 = TO_F32(T, q[lo]), x1 = TO_F32(T, q[hi]);
      q[lo] = FROM_F32(T, x0 * sc.y - x1 * sc.x);
      q[hi] = FROM_F32(T, x1 * sc.y + x0 * sc.x);
    } else if (d0 + row < p.cache_rows) {
      const uint g = h - p.heads;
      uint lo = (t * p.kv_heads + g) * 2u * p.half_d + i, hi = lo + p.half_d;
      const uint c_lo = ((b * p.cache_rows + d0 + row) * p.kv_heads + g) * 2u * p.half_d + i, c_hi = c_lo + p.half_d;
      float x0 = TO_F32(T, k[lo]), x1 = TO_F32(T, k[hi]);
      k_cache[c_lo] = FROM_F32(T, x0 * sc.y - x1 * sc.x);
      k_cache[c_hi] = FROM_F32(T, x1 * sc.y + x0 * sc.x);
      v_cache[c_lo] = v[lo];
      v_cache[c_hi] = v[hi];
    }
  }
}
