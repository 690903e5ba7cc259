#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
const uint kBatch = 16u;

void main() {
  for (uint t = gl_WorkGroupID.x; t < p.tokens; t += gl_NumWorkGroups.x) {
    int id = ids[t];
    bool in_chunk = id >= p.r0 && id < p.r1;
    bool zeros = (id < 0 || id >= p.vocab) && p.r0 == 0;
    if (!in_chunk && !zeros) continue;
    uint src = in_chunk ? uint(id - p.r0) * p.cols : 0u;
    // kBatch values a thread loaded before any is stored: a table kept in system memory (ModelWeights::embed_in_host)
    // answers each load over the bus, and a loop that stores each value as it comes waits a round trip a step (the
    // 7B shape's decoded token: 3,584 values, 14 a thread, ~23 us on the H100, session 46).
    for (uint c0 = gl_LocalInvocationID.x; c0 < p.cols; c0 += gl_WorkGroupSize.x * kBatch) {
      float v[kBatch];
      [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
        const uint c = c0 + u * gl_WorkGroupSize.x;
        v[u] = in_chunk && c < p.cols ? TO_F32(T, table[src + c]) : 0.0;
      }
      [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
        const uint c = c0 + u * gl_WorkGroupSize.x;
        if (c < p.cols) y[t * p.cols + c] = FROM_F32(O, v[u]);
      }
    }
  }
}
