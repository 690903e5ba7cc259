#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, :] = table[ids[t], :] for the tokens whose id falls in this dispatch's chunk [r0, r1) of table
// rows (the host splits tables past maxStorageBufferRange into chunks; `table` is bound from row r0).
// Tokens whose id is outside [0, V) get zeros, written by the chunk that starts at row 0, so across
// the chunks every element of y is written exactly once. One workgroup per token (grid-stride over
// tokens), its threads over the columns.
#include "common/types.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Table { STORE(T) table[]; };
layout(binding = 1) readonly buffer Ids { int ids[]; };
layout(binding = 2) writeonly buffer Y { STORE(O) y[]; };
layout(push_constant) uniform Params {
  uint tokens;
  uint cols;
  int r0, r1;  // this chunk's rows of the table
  int vocab;   // V, the table's rows
} p;

void main() {
  for (uint t = gl_WorkGroupID.x; t < p.tokens; t += gl_NumWorkGroups.x) {
    int id = ids[t];
    bool in_chunk = id >= p.r0 && id < p.r1;
    bool zeros = (id < 0 || id >= p.vocab) && p.r0 == 0;
    if (!in_chunk && !zeros) continue;
    uint src = in_chunk ? uint(id - p.r0) * p.cols : 0u;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x)
      y[t * p.cols + c] = FROM_F32(O, in_chunk ? TO_F32(T, table[src + c]) : 0.0);
  }
}
