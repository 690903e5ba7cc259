#version 450
#extension GL_GOOGLE_include_directive : require
// One step of a descent (p.search: 0 top-k by count, 1 top-p by mass; p.level: the key byte).
// Every workgroup first takes the previous byte's choice from the previous dispatch's histogram (the
// same arithmetic in every group; group 0 stores it for the later dispatches), then adds the tokens
// whose key matches the bytes chosen so far to this byte's histogram: count and fixed-point mass per
// bucket, in shared memory first, then with one global atomic per non-empty bucket.
#extension GL_KHR_memory_scope_semantics : require
#include "sample_common.glsl"

// Queue-family scope: the other groups of this dispatch are all that the atomics must be atomic with;
// the next dispatch sees the sums through a barrier.
uint global_add(uint at, uint v) {
  return atomicAdd(work[at], v, gl_ScopeQueueFamily, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
}

shared uint h_count[kBuckets], h_lo[kBuckets], h_hi[kBuckets];

// Explicit scopes: glslang's default for atomics is device scope, which this device's memory model lacks.
#define shared_add(x, v) atomicAdd(x, v, gl_ScopeWorkgroup, gl_StorageSemanticsNone, gl_SemanticsRelaxed)

void add_mass(uint d, uvec2 w) {
  uint old = shared_add(h_lo[d], w.x);
  uint carry = old + w.x < old ? 1u : 0u;  // exactly the add that wraps the low word carries
  if (w.y + carry != 0u) shared_add(h_hi[d], w.y + carry);
}

// top-p's goal: top_p × the mass of the tokens top-k keeps (all tokens without top-k), at least one unit.
uvec2 top_p_goal(float max_score) {
  uvec2 norm;
  if ((p.flags & kTopK) != 0u) {
    Descent k = descend(hist_at(0u, 3u), 3u, load_state(state_at(0u, 2u)), false, p.top_k, uvec2(0u));
    uvec2 w = weight(key_score(k.prefix), max_score);
    norm = add64(k.before_mass, mul64(w, ties_taken(k, false, uvec2(0u), w)));
  } else {
    const uint b = gl_LocalInvocationID.x, h = hist_at(0u, 0u) + 3u * b;
    norm = workgroup_total(uvec3(work[h], work[h + 1u], work[h + 2u])).yz;
  }
  uvec2 goal = mul_frac64(norm, p.top_p);
  return goal == uvec2(0u) ? uvec2(1u, 0u) : goal;
}

void main() {
  const uint g = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const bool lead = g == 0u && t == 0u;
  const bool by_mass = p.search == 1u;
  float max_score = global_max();
  Descent from = start();
  if (p.level > 0u) {
    const uint l = p.level - 1u;
    uvec2 goal = uvec2(0u);
    if (by_mass) {
      if (l == 0u) {
        goal = top_p_goal(max_score);
        if (lead) {
          work[goal_at()] = goal.x;
          work[goal_at() + 1u] = goal.y;
        }
      } else {
        goal = uvec2(work[goal_at()], work[goal_at() + 1u]);
      }
    }
    Descent prev = l == 0u ? start() : load_state(state_at(p.search, l - 1u));
    from = descend(hist_of(p.search, l), l, prev, by_mass, p.top_k, goal);
    if (lead) store_state(state_at(p.search, l), from);
  }

  h_count[t] = 0u;
  h_lo[t] = 0u;
  h_hi[t] = 0u;
  barrier();
  const uint shift = 24u - 8u * p.level;
  for (uint e = 0u; e < kPerThread; ++e) {
    uint id = g * kChunk + t * kPerThread + e;
    if (id >= p.vocab) break;
    float s = score(id);
    uint key = desc_key(s);
    if (!matches(key, from.prefix, p.level)) continue;
    uint d = (key >> shift) & 255u;
    shared_add(h_count[d], 1u);
    add_mass(d, weight(s, max_score));
  }
  barrier();
  if (h_count[t] != 0u) {
    const uint at = hist_of(p.search, p.level) + 3u * t;
    global_add(at, h_count[t]);
    uint old = global_add(at + 1u, h_lo[t]);
    uint carry = old + h_lo[t] < old ? 1u : 0u;
    if (h_hi[t] + carry != 0u) global_add(at + 2u, h_hi[t] + carry);
  }
}
