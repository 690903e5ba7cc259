#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Reads a byte range so that the next dispatch finds it in the GPU's L2 cache (ops::prefetch_into_cache): run beside
// a stage that leaves the memory bus idle (a decoded token's attention, bound by its chains of round trips), it
// fetches the weight the stage after reads. The loads' XOR, one word a workgroup, goes to sums (so that no
// compiler drops them; ops::ref::prefetch_sums says which words each workgroup takes).
// Workgroup g takes the 16-byte pieces [g * per_group, (g + 1) * per_group) of the first pieces16; workgroup 0 also
// the words past them (tail_words of them).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src16 { uvec4 src16[]; };
layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 1) writeonly buffer Sums { uint sums[]; };
layout(push_constant) uniform Params { uint pieces16, per_group, tail_words; } p;

const uint kBatch = 8u;  // loads in flight a thread before any is used
shared uint group_xor[256u / 8u];  // a word a subgroup (subgroups of 8 lanes at the least)

void main() {
  const uint tid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  const uint first = gl_WorkGroupID.x * p.per_group, end = min(first + p.per_group, p.pieces16);
  uvec4 acc = uvec4(0u);
  for (uint i = first + tid; i < end; i += n * kBatch) {
    uvec4 v[kBatch];
    [[unroll]] for (uint b = 0u; b < kBatch; ++b) v[b] = i + b * n < end ? src16[i + b * n] : uvec4(0u);
    [[unroll]] for (uint b = 0u; b < kBatch; ++b) acc ^= v[b];
  }
  uint x = acc.x ^ acc.y ^ acc.z ^ acc.w;
  if (gl_WorkGroupID.x == 0u)
    for (uint t = tid; t < p.tail_words; t += n) x ^= src[4u * p.pieces16 + t];
  x = subgroupXor(x);
  if (subgroupElect()) group_xor[gl_SubgroupID] = x;
  barrier();
  if (tid == 0u) {
    uint all = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) all ^= group_xor[s];
    sums[gl_WorkGroupID.x] = all;
  }
}
