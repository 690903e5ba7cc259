#version 450
#extension GL_GOOGLE_include_directive : require
// Backward of y[t, :] = table[ids[t], :]:  dtable[v, c] += sum over tokens t with ids[t] == v of dy[t, c],
// for the ids in this dispatch's chunk [r0, r1) of table rows (dtable bound from row r0). Ids outside
// [0, V) contribute nothing. Deterministic without float atomics: the first token with a given id sums
// dy over all tokens with that id, in token order, and adds once; later tokens with that id skip.
// O(tokens^2 * C) work, fine for the token counts it sees. One workgroup per token (grid-stride over
// tokens), its threads over the columns.
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { STORE(T) dy[]; };
layout(binding = 1) readonly buffer Ids { int ids[]; };
layout(binding = 2) buffer DTable { float dtable[]; };
layout(push_constant) uniform Params {
  uint tokens;
  uint cols;
  int r0, r1;  // this chunk's rows of dtable
} p;

void main() {
  for (uint t = gl_WorkGroupID.x; t < p.tokens; t += gl_NumWorkGroups.x) {
    int id = ids[t];
    if (id < p.r0 || id >= p.r1) continue;
    bool first = true;
    for (uint u = 0u; u < t && first; ++u) first = ids[u] != id;
    if (!first) continue;
    uint dst = uint(id - p.r0) * p.cols;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float sum = 0.0;
      for (uint u = t; u < p.tokens; ++u)
        if (ids[u] == id) sum += TO_F32(T, dy[u * p.cols + c]);
      dtable[dst + c] += sum;
    }
  }
}
