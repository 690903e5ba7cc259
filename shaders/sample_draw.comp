#version 450
#extension GL_GOOGLE_include_directive : require
// The last two dispatches of a sampled token, one source:
//  PARTIALS: resolves the final key byte of the descent that decides the kept prefix (top-p's when on,
//    else top-k's; none: every token) and how many tokens of that key it takes (ties: the lowest ids);
//    group 0 stores it; each group stores its count of such ties and the mass of its surely kept tokens.
//    min-p is a plain floor on the score, applied to both.
//  DRAW: u = floor(total kept mass × r / 2^32), r from the counter-based hash of (seed, counter + j); the
//    token whose interval of the kept mass, in id order, holds u. Each thread owns kPerThread ids; the
//    groups before it and the threads before it give its offset; exactly one thread holds each u.
//  KEPT_MASK: as DRAW, but writes out_ids[id] = 1 for kept ids, 0 for the others (tests).
#include "sample_common.glsl"

bool passes_floor(float s, float max_score) { return (p.flags & kMinP) == 0u || s >= max_score + p.log_min_p; }

#ifdef PARTIALS
void main() {
  const uint g = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  float max_score = global_max();
  const bool cut = (p.flags & (kTopK | kTopP)) != 0u;
  uint final_key = 0xffffffffu, taken = 0u;
  uvec2 w_final = uvec2(0u);
  if (cut) {
    const uint search = (p.flags & kTopP) != 0u ? 1u : 0u;
    const bool by_mass = search == 1u;
    uvec2 goal = by_mass ? uvec2(work[goal_at()], work[goal_at() + 1u]) : uvec2(0u);
    Descent d = descend(hist_at(search, 3u), 3u, load_state(state_at(search, 2u)), by_mass, p.top_k, goal);
    final_key = d.prefix;
    w_final = weight(key_score(final_key), max_score);
    taken = ties_taken(d, by_mass, goal, w_final);
  }
  if (g == 0u && t == 0u) {
    work[final_at()] = final_key;
    work[final_at() + 1u] = taken;
    work[final_at() + 2u] = w_final.x;
    work[final_at() + 3u] = w_final.y;
    work[final_at() + 4u] = cut ? 1u : 0u;
  }
  uvec3 mine = uvec3(0u);  // ties, then the mass of tokens before the final key
  for (uint e = 0u; e < kPerThread; ++e) {
    uint id = g * kChunk + t * kPerThread + e;
    if (id >= p.vocab) break;
    float s = score(id);
    if (!passes_floor(s, max_score)) continue;
    uint key = desc_key(s);
    if (!cut || key < final_key) mine.yz = add64(mine.yz, weight(s, max_score));
    else if (key == final_key) ++mine.x;
  }
  uvec3 total = workgroup_total(mine);
  if (t == 0u) {
    work[part_draw_at(g)] = total.x;
    work[part_draw_at(g) + 1u] = total.y;
    work[part_draw_at(g) + 2u] = total.z;
  }
}
#else
uint hash32(uint x) {  // lowbias32 (Wellons): a bijection with good avalanche
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  x ^= x >> 16u;
  return x;
}
uint draw_bits(uint j) {
  uint h = hash32(rng[0] ^ 0x9e3779b9u);
  h = hash32(h ^ rng[1]);
  h = hash32(h ^ (rng[2] + j));
  return hash32(h + 0x632be5abu);
}

void main() {
  const uint g = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  float max_score = global_max();
  const uint final_key = work[final_at()], taken = work[final_at() + 1u];
  const uvec2 w_final = uvec2(work[final_at() + 2u], work[final_at() + 3u]);
  const bool cut = work[final_at() + 4u] != 0u;

  // The groups before this one, and all groups: ties and surely kept mass.
  uvec3 before = uvec3(0u), all = uvec3(0u);
  for (uint j = t; j < p.groups; j += kThreads) {
    uvec3 v = uvec3(work[part_draw_at(j)], work[part_draw_at(j) + 1u], work[part_draw_at(j) + 2u]);
    all = uvec3(all.x + v.x, add64(all.yz, v.yz));
    if (j < g) before = uvec3(before.x + v.x, add64(before.yz, v.yz));
  }
  before = workgroup_total(before);
  all = workgroup_total(all);

  // This thread's ties and surely kept mass, and the rank of its first tie among all ties.
  uvec3 mine = uvec3(0u);
  for (uint e = 0u; e < kPerThread; ++e) {
    uint id = g * kChunk + t * kPerThread + e;
    if (id >= p.vocab) break;
    float s = score(id);
    if (!passes_floor(s, max_score)) continue;
    uint key = desc_key(s);
    if (!cut || key < final_key) mine.yz = add64(mine.yz, weight(s, max_score));
    else if (key == final_key) ++mine.x;
  }
  const uint first_tie = before.x + workgroup_scan(mine).x - mine.x;
  const uint ties_kept = taken > first_tie ? min(taken - first_tie, mine.x) : 0u;
  const uvec2 kept_mass = add64(mine.yz, mul64(w_final, ties_kept));

#ifdef KEPT_MASK
  uint rank = first_tie;
  for (uint e = 0u; e < kPerThread; ++e) {
    uint id = g * kChunk + t * kPerThread + e;
    if (id >= p.vocab) break;
    float s = score(id);
    uint key = desc_key(s);
    bool kept = passes_floor(s, max_score) && (!cut || key < final_key || (key == final_key && rank++ < taken));
    out_ids[id] = kept ? 1 : 0;
  }
#else
  const uvec2 group_offset = add64(before.yz, mul64(w_final, min(before.x, taken)));
  const uvec2 offset = add64(group_offset, sub64(workgroup_scan(uvec3(0u, kept_mass)).yz, kept_mass));
  const uvec2 end = add64(offset, kept_mass);
  const uvec2 total = add64(all.yz, mul64(w_final, min(all.x, taken)));
  for (uint j = 0u; j < p.draws; ++j) {
    uvec2 u = mul_frac64(total, draw_bits(j));
    if (less64(u, offset) || !less64(u, end)) continue;
    uvec2 at = offset;
    uint rank = first_tie;
    for (uint e = 0u; e < kPerThread; ++e) {
      uint id = g * kChunk + t * kPerThread + e;
      if (id >= p.vocab) break;
      float s = score(id);
      if (!passes_floor(s, max_score)) continue;
      uint key = desc_key(s);
      if (cut && (key > final_key || (key == final_key && rank++ >= taken))) continue;
      at = add64(at, weight(s, max_score));
      if (less64(u, at)) {
        out_ids[j] = int(id);
        break;
      }
    }
  }
#endif
}
#endif
