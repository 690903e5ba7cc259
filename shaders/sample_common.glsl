// Shared by the sample_* kernels (engine/ops/sample.h has the whole design). Every kernel binds the same
// five buffers and takes the same push-constant block, so that one C++ struct (SampleParams) mirrors it.
//
// Order: tokens sorted by score s (penalised logit × 1/T) descending, ties by lower id first, as the CPU
// Sampler. The order key of a token is desc_key(s): ascending keys = descending scores. Every threshold
// the sampler needs (top-k, top-p) is a prefix of that order, found by a radix descent over the key's
// four bytes (one multi-workgroup histogram dispatch per byte); ties at the final key go by lowest id.
// Masses are weights w = exp(s - max) as fixed point, 2^-40 units in 64 bits (uvec2: lo, hi): integer
// sums are exact and independent of the order of the atomics, so a seed reproduces its tokens.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common/reduce.glsl"

layout(local_size_x = 256) in;
const uint kThreads = 256u;
const uint kPerThread = 4u;                 // thread t of group g: ids g·1024 + 4t .. + 3
const uint kChunk = kThreads * kPerThread;  // ids per workgroup
const uint kBuckets = 256u;                 // one key byte per descent level

layout(binding = 0) readonly buffer Logits { float logits[]; };
layout(binding = 1) readonly buffer Seen { uint seen[]; };  // bit id % 32 of word id / 32: id was seen
layout(binding = 2) readonly buffer Rng { uint rng[]; };    // seed lo, seed hi, counter
layout(binding = 3) buffer Work { uint work[]; };  // the layout below
layout(binding = 4) buffer Out { int out_ids[]; };          // drawn ids [draws], or the kept mask [V]

layout(push_constant) uniform Params {
  uint vocab;
  uint groups;           // workgroups of the multi-group kernels: ceil(vocab / kChunk)
  uint top_k;            // used when flags & kTopK (1 .. vocab - 1)
  uint top_p;            // top_p × 2^32, used when flags & kTopP
  float log_min_p;       // log(min_p), used when flags & kMinP
  float inv_temperature; // 1 / T (1 when greedy)
  float penalty;         // repetition penalty, used when flags & kPenalty
  uint search;           // sample_hist: 0 the top-k descent, 1 the top-p descent
  uint level;            // sample_hist: the key byte this dispatch histograms (0 = the highest)
  uint draws;            // sample_draw: ids to draw, with counters counter .. counter + draws - 1
  uint flags;
} p;
const uint kTopK = 1u, kTopP = 2u, kMinP = 4u, kPenalty = 8u;

// work[] layout, in 32-bit words.
uint part_max_at(uint g) { return 2u * g; }                       // per group: max score bits, its first id
uint hist_at(uint search, uint level) { return 2u * p.groups + (search * 4u + level) * kBuckets * 3u; }
const uint kHistWords = 2u * 4u * 256u * 3u;                      // count, mass lo, mass hi per bucket
uint state_at(uint search, uint level) { return 2u * p.groups + kHistWords + (search * 4u + level) * 8u; }
uint goal_at() { return 2u * p.groups + kHistWords + 64u; }       // top-p's goal mass (2 words)
uint final_at() { return 2u * p.groups + kHistWords + 68u; }      // key, ties kept, w lo, w hi, active
uint part_draw_at(uint g) { return 2u * p.groups + kHistWords + 80u + 4u * g; }  // ties, mass lo, hi

// --- 64-bit unsigned arithmetic on uvec2 (lo, hi) ---
uvec2 add64(uvec2 a, uvec2 b) {
  uint c;
  uint lo = uaddCarry(a.x, b.x, c);
  return uvec2(lo, a.y + b.y + c);
}
uvec2 sub64(uvec2 a, uvec2 b) {
  uint borrow;
  uint lo = usubBorrow(a.x, b.x, borrow);
  return uvec2(lo, a.y - b.y - borrow);
}
bool less64(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }
// a × b for a 32-bit b (no overflow for our magnitudes: masses < 2^58).
uvec2 mul64(uvec2 a, uint b) {
  uint hi, lo;
  umulExtended(a.x, b, hi, lo);
  return uvec2(lo, hi + a.y * b);
}
// floor(a × f / 2^32).
uvec2 mul_frac64(uvec2 a, uint f) {
  uint h1, l1, h2, l2;
  umulExtended(a.x, f, h1, l1);
  umulExtended(a.y, f, h2, l2);
  return add64(uvec2(l2, h2), uvec2(h1, 0u));
}

// --- scores, keys, weights ---
bool is_seen(uint id) { return (seen[id >> 5u] & (1u << (id & 31u))) != 0u; }

// The CPU Sampler's arithmetic: HF's penalty on seen ids (x·p if negative, x/p otherwise), then × 1/T.
// NaN logits score -inf (never kept).
float score(uint id) {
  float x = logits[id];
  if (isnan(x)) return uintBitsToFloat(0xff800000u);
  if ((p.flags & kPenalty) != 0u && is_seen(id)) x = x < 0.0 ? x * p.penalty : x / p.penalty;
  return x * p.inv_temperature;
}

uint desc_key(float s) {
  uint u = s == 0.0 ? 0u : floatBitsToUint(s);  // -0 ties with +0, as on the CPU
  uint asc = (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
  return ~asc;
}
float key_score(uint key) {
  uint asc = ~key;
  return uintBitsToFloat((asc & 0x80000000u) != 0u ? (asc & 0x7fffffffu) : ~asc);
}

// w = exp(s - max) in 2^-40 units: exact for w >= 2^-16 (a float's 24 bits), truncated below.
uvec2 weight(float s, float max_score) {
  float w = exp(s - max_score) * 256.0;  // (0, 256]
  if (!(w > 0.0)) return uvec2(0u);
  float whole = floor(w);
  return uvec2(uint((w - whole) * 4294967296.0), uint(whole));
}

// The max over all groups' partial maxima (every workgroup computes it; the same value everywhere).
float global_max() {
  float m = uintBitsToFloat(0xff800000u);
  for (uint g = gl_LocalInvocationID.x; g < p.groups; g += kThreads) m = max(m, uintBitsToFloat(work[part_max_at(g)]));
  return workgroup_max(m);
}

// --- workgroup scan of (count, mass) over kThreads entries, in shared memory ---
shared uvec3 ls_scan[kThreads];

// Inclusive prefix sums of (count, mass lo, mass hi) in thread order; every thread gets its own.
uvec3 workgroup_scan(uvec3 v) {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  ls_scan[t] = v;
  barrier();
  for (uint d = 1u; d < kThreads; d <<= 1u) {
    uvec3 other = t >= d ? ls_scan[t - d] : uvec3(0u);
    barrier();
    if (t >= d) {
      uvec2 m = add64(v.yz, other.yz);
      v = uvec3(v.x + other.x, m);
      ls_scan[t] = v;
    }
    barrier();
  }
  return v;
}
uvec3 workgroup_total(uvec3 v) {
  workgroup_scan(v);
  return ls_scan[kThreads - 1u];  // the scan's last barrier made every write visible
}

// --- one descent step ---
// A state: the key bits chosen so far, and the count and mass of the tokens before them in the order.
struct Descent {
  uint prefix;
  uint before_count;
  uvec2 before_mass;
  uint count;   // tokens in the chosen bucket
  uvec2 mass;
};
Descent load_state(uint at) {
  return Descent(work[at], work[at + 1u], uvec2(work[at + 2u], work[at + 3u]), work[at + 4u],
                 uvec2(work[at + 5u], work[at + 6u]));
}
void store_state(uint at, Descent d) {
  work[at] = d.prefix;
  work[at + 1u] = d.before_count;
  work[at + 2u] = d.before_mass.x;
  work[at + 3u] = d.before_mass.y;
  work[at + 4u] = d.count;
  work[at + 5u] = d.mass.x;
  work[at + 6u] = d.mass.y;
}

shared Descent ls_chosen;
shared uvec2 ls_total;

// Picks the bucket of the histogram at `hist` (tokens matching `from.prefix` at byte `level`) holding the
// first token whose prefix of the order reaches the target: `target_count` tokens (by_mass false), or a
// mass >= `target_mass` (by_mass true). Every thread returns the same; ls_total holds the histogram's mass.
Descent descend(uint hist, uint level, Descent from, bool by_mass, uint target_count, uvec2 target_mass) {
  const uint b = gl_LocalInvocationID.x;
  uvec3 own = uvec3(work[hist + 3u * b], work[hist + 3u * b + 1u], work[hist + 3u * b + 2u]);
  uvec3 incl = workgroup_scan(own);
  uvec3 excl = uvec3(incl.x - own.x, sub64(incl.yz, own.yz));
  bool reached_incl, reached_excl;
  if (by_mass) {
    reached_incl = !less64(add64(from.before_mass, incl.yz), target_mass);
    reached_excl = !less64(add64(from.before_mass, excl.yz), target_mass);
  } else {
    reached_incl = from.before_count + incl.x >= target_count;
    reached_excl = from.before_count + excl.x >= target_count;
  }
  if (b == kThreads - 1u) {
    ls_total = incl.yz;
    // Not reached at all (only by a broken invariant): the last bucket, so that the result stays a token.
    if (!reached_incl) ls_chosen = Descent(from.prefix | (b << (24u - 8u * level)), from.before_count + excl.x,
                                           add64(from.before_mass, excl.yz), own.x, own.yz);
  }
  barrier();
  if (reached_incl && !reached_excl && own.x != 0u)
    ls_chosen = Descent(from.prefix | (b << (24u - 8u * level)), from.before_count + excl.x,
                        add64(from.before_mass, excl.yz), own.x, own.yz);
  barrier();
  return ls_chosen;
}

// Whether `key` has the bytes above `level` that `prefix` chose.
bool matches(uint key, uint prefix, uint level) { return level == 0u || (key >> (32u - 8u * level)) == (prefix >> (32u - 8u * level)); }

// The state before the descent of `search` starts: nothing chosen.
Descent start() { return Descent(0u, 0u, uvec2(0u), 0u, uvec2(0u)); }

// The histogram the descent of `search` reads at `level` (byte 0's is shared by both descents).
uint hist_of(uint search, uint level) { return level == 0u ? hist_at(0u, 0u) : hist_at(search, level); }

// The number of tokens with the final key that the prefix takes (ties in id order): top-k's remainder, or
// the fewest whose mass reaches top-p's goal (all of them weigh w).
uint ties_taken(Descent d, bool by_mass, uvec2 goal, uvec2 w) {
  if (!by_mass) return min(p.top_k - d.before_count, d.count);
  uint lo = 1u, hi = d.count;  // the smallest t in [1, count] with before + t·w >= goal
  while (lo < hi) {
    uint mid = (lo + hi) / 2u;
    if (less64(add64(d.before_mass, mul64(w, mid)), goal)) lo = mid + 1u; else hi = mid;
  }
  return lo;
}
