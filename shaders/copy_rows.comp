#version 450
#extension GL_GOOGLE_include_directive : require
// Copies `rows` rows of `words` 32-bit words: dst[dst_row0 + r] = src[src_row0 + r] for r < rows.
// Either start may add offsets[src_slot] / offsets[dst_slot], an i32 the host writes before each run
// of a recorded program (a KV-cache write at the current position; picking the last real row of a
// padded prefill chunk). Slot -1 adds nothing. Rows past the end of either side are skipped.
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 1) writeonly buffer Dst { uint dst[]; };
layout(binding = 2) readonly buffer Offsets { int offsets[]; };
layout(push_constant) uniform Params {
  uint rows, words;           // what to copy
  uint src_rows, dst_rows;    // rows each side holds
  uint src_row0, dst_row0;
  int src_slot, dst_slot;
} p;

void main() {
  uint s0 = p.src_row0 + (p.src_slot >= 0 ? uint(max(offsets[p.src_slot], 0)) : 0u);
  uint d0 = p.dst_row0 + (p.dst_slot >= 0 ? uint(max(offsets[p.dst_slot], 0)) : 0u);
  uint total = p.rows * p.words;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint r = i / p.words, w = i % p.words;
    if (s0 + r < p.src_rows && d0 + r < p.dst_rows) dst[(d0 + r) * p.words + w] = src[(s0 + r) * p.words + w];
  }
}
