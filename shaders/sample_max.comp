#version 450
#extension GL_GOOGLE_include_directive : require
// The first dispatch of a sampled token: each workgroup's maximum score and the lowest id holding it
// (torch.argmax's tie rule, as a max over -id: exact in f32 since vocab <= 2^24, checked by the host).
// It also zeroes the histograms that the sample_hist dispatches fill with atomics.
#include "sample_common.glsl"

const uint kNone = 0xffffffffu;

void main() {
  const uint g = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  for (uint i = g * kThreads + t; i < kHistWords; i += p.groups * kThreads) work[hist_at(0u, 0u) + i] = 0u;
  const float neg_inf = uintBitsToFloat(0xff800000u);
  float best = neg_inf;
  uint best_id = kNone;
  for (uint e = 0u; e < kPerThread; ++e) {
    uint id = g * kChunk + t * kPerThread + e;
    if (id >= p.vocab) break;
    float s = score(id);
    if (best_id == kNone || s > best) {
      best = s;
      best_id = id;
    }
  }
  float m = workgroup_max(best);
  float first = -workgroup_max(best_id != kNone && best == m ? -float(best_id) : neg_inf);
  if (t == 0u) {
    work[part_max_at(g)] = floatBitsToUint(m);
    work[part_max_at(g) + 1u] = uint(first);
  }
}
