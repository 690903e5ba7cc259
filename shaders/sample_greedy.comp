#version 450
#extension GL_GOOGLE_include_directive : require
// Greedy: out_ids[0] = the lowest id holding the maximum score, from sample_max's per-group maxima (the
// groups are in id order, so the lowest id among the groups that hold the maximum is the first one).
// One workgroup.
#include "sample_common.glsl"

void main() {
  const float neg_inf = uintBitsToFloat(0xff800000u);
  float m = global_max();
  float key = neg_inf;
  for (uint g = gl_LocalInvocationID.x; g < p.groups; g += kThreads)
    if (uintBitsToFloat(work[part_max_at(g)]) == m) key = max(key, -float(work[part_max_at(g) + 1u]));
  float first = -workgroup_max(key);
  if (gl_LocalInvocationID.x == 0u) out_ids[0] = int(first);
}
