#version 450
// Between two decode steps recorded in one program (infer::Generator's bursts): the token the sampler chose
// becomes the next step's input. out_ids[k] = sampled[0]; ids[0] = it; from the second step on (k > 0) the
// position and the past length advance by one; the sampler's draw counter (rng[2]) advances by one; with
// mark != 0 the token's bit is set in the repetition penalty's seen set. One invocation.
layout(local_size_x = 1) in;

layout(binding = 0) readonly buffer Sampled { int sampled[]; };
layout(binding = 1) buffer Ids { int ids[]; };
layout(binding = 2) buffer Positions { int positions[]; };
layout(binding = 3) buffer Step { int step[]; };
layout(binding = 4) buffer Rng { int rng[]; };
layout(binding = 5) buffer Seen { int seen[]; };
layout(binding = 6) writeonly buffer Out { int out_ids[]; };
layout(push_constant) uniform Params {
  uint k;          // the step: out_ids' slot
  uint past_slot;  // step[past_slot]: tokens in the KV cache before this step's token
  uint mark;       // set the token's bit in seen
  uint vocab;
} p;

void main() {
  const int id = sampled[0];
  out_ids[p.k] = id;
  ids[0] = id;
  if (p.k > 0u) {
    positions[0] += 1;
    step[p.past_slot] += 1;
  }
  rng[2] += 1;
  if (p.mark != 0u && id >= 0 && uint(id) < p.vocab) seen[uint(id) >> 5] |= int(1u << (uint(id) & 31u));
}
