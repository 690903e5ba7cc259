#version 450
#extension GL_GOOGLE_include_directive : require
// A decoded token's whole layer in one dispatch of p.groups persistent workgroups (all resident at once: the
// host sizes p.groups to the GPU's multiprocessors, ops::decode_layer_groups), its five stages separated by a grid
// barrier instead of a dispatch each (a token at 0.5B was 123 dependent dispatches of ~9 us, each far from moving its
// bytes: issue 20). Each stage computes what the dispatch it replaces computes, in the same order, so the bits:
//   A  the input norm, q, k, v, their biases, RoPE, k and v into the cache  (shaders/matvec_norm_qkv.comp)
//   B  attention over the cache split in 64 keys a part, the last part of a head combining
//                                             (shaders/attention_split.comp, PARTIAL with kVec and kLastCombines)
//   C  x += attn·Woᵀ                          (shaders/matvec8.comp accumulating into the f32 stream)
//   D  the post-attention norm, gate, up and act(gate)·up   (shaders/matvec_norm.comp GLU_SILU / GLU_GELU)
//   E  x += gated·Wdownᵀ                      (shaders/matvec8.comp)
// A workgroup takes every p.groups-th piece of a stage (columns, pairs, attention parts), so any number of
// workgroups gives the same bits. Stage B runs four 64-invocation parts a workgroup, each part reducing over its own
// subgroups as a 64-invocation workgroup would (subgroups of at most 64 lanes that divide 64).
// One token (M = 1); the weights K-contiguous, no biases but q's, k's and v's; x: the f32 residual stream [K].
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_memory_scope_semantics : require
#include "common/types.glsl"
#include "common/reduce.glsl"
#include "common/round_to.glsl"
#include "common/glu.glsl"
#include "common/rope_angle.glsl"

layout(local_size_x = 256) in;

// Written by one workgroup and read by another within the dispatch: coherent.
layout(binding = 0) coherent buffer X { vec4 x4[]; };
layout(binding = 0) coherent buffer X1 { float x1[]; };
layout(binding = 1) readonly buffer NormW1 { uint nw1[]; };  // the input norm's weight, of type p.nw1_type
layout(binding = 2) readonly buffer NormW2 { uint nw2[]; };  // the post-attention norm's, of type p.nw2_type
layout(binding = 3) readonly buffer Wq { uvec4 wq[]; };
layout(binding = 4) readonly buffer Wk { uvec4 wk[]; };
layout(binding = 5) readonly buffer Wv { uvec4 wv[]; };
layout(binding = 6) readonly buffer Bq { STORE(W_T) bq[]; };
layout(binding = 7) readonly buffer Bk { STORE(W_T) bk[]; };
layout(binding = 8) readonly buffer Bv { STORE(W_T) bv[]; };
layout(binding = 9) readonly buffer Positions { int pos[]; };
layout(binding = 10) readonly buffer InvFreq { float inv_freq[]; };
layout(binding = 11) readonly buffer Offsets { int offsets[]; };  // offsets[p.slot]: the tokens already cached
layout(binding = 12) coherent buffer Q { STORE(ACT_T) q[]; };
layout(binding = 13) coherent buffer KCache { STORE(ACT_T) k_cache[]; };
layout(binding = 13) coherent buffer KCache16 { uvec4 k16[]; };
layout(binding = 14) coherent buffer VCache { STORE(ACT_T) v_cache[]; };
layout(binding = 14) coherent buffer VCache16 { uvec4 v16[]; };
layout(binding = 15) coherent buffer Part { float part[]; };  // [H, splits, D + 2]: o, max, sum of a part
layout(binding = 16) coherent buffer Done { uint done[]; };   // [H]: a head's parts done, then 0 again
layout(binding = 17) coherent buffer Attn { STORE(ACT_T) attn[]; };
layout(binding = 17) coherent buffer Attn16 { uvec4 attn16[]; };
layout(binding = 18) readonly buffer Wo { uvec4 wo[]; };
layout(binding = 19) readonly buffer Wgate { uvec4 wg[]; };
layout(binding = 20) readonly buffer Wup { uvec4 wu[]; };
layout(binding = 21) readonly buffer Wdown { uvec4 wd[]; };
layout(binding = 22) coherent buffer Gated { STORE(ACT_T) gated[]; };
layout(binding = 22) coherent buffer Gated16 { uvec4 gated16[]; };
// The grid barrier's count and generation, 256 bytes apart: the waiting workgroups' reads of the generation do not
// queue behind the arrivals' atomics on one cache line.
layout(binding = 23) coherent buffer Sync { uint sync_count; uint sync_pad[63]; uint sync_generation; };

layout(push_constant) uniform Params {
  uint K;           // hidden size
  uint I;           // the MLP's intermediate size
  uint heads, kv_heads, half_d;
  uint cache_rows;  // the caches' rows (S)
  int slot;
  float eps;
  uint flags;       // 1: q's, k's and v's biases
  uint nw1_type, nw2_type;  // the norms' weight types: 0 f32, 1 f16, 2 bf16
  float scale;      // the attention's
  uint splits;      // parts of 64 keys a head: ceil(S / 64)
  uint groups;      // the workgroups of the dispatch
} p;

// The column splits (ops::detail::matvec_split) of stages A, C, D and E, as their dispatches would take them.
layout(constant_id = 1) const uint kSplitQkv = 1u;
layout(constant_id = 2) const uint kSplitO = 1u;
layout(constant_id = 3) const uint kSplitGlu = 1u;
layout(constant_id = 4) const uint kSplitDown = 1u;

#define MAX_D 256
const uint kPart = 64u;   // invocations of an attention part
const uint kParts = 4u;   // parts a workgroup
// Loads in flight an invocation in the attention's loops (constant 6; attention_split.comp's 8): the sums keep their
// order whatever it is, and fewer keep the kernel's registers down.
layout(constant_id = 6) const uint kBatch = 8u;
const uint kStageWords = 1024u;  // x̂ staged 8 values to a uvec4 (f16), or 4 (f32): 16 KiB
shared uvec4 xs[kStageWords];
shared vec2 split_sums[(256u / 8u) * 4u];  // [subgroup][column of the subgroup's batch]
shared float q_row[kParts][MAX_D];
shared float probs[kParts][kPart];
shared float pv[kParts][kPart * 8u];
shared float part_scratch[256u / 8u];
shared bool last_of_head[kParts];

// ---- unpacking, as shaders/matvec8.comp and common/matvec_norm_stage.glsl
void unpack8_half(uvec4 r, out vec4 lo, out vec4 hi) {
  lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
  hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
}
void unpack8_bf16(uvec4 r, out vec4 lo, out vec4 hi) {
  lo = vec4(uintBitsToFloat(r.x << 16), uintBitsToFloat(r.x & 0xffff0000u), uintBitsToFloat(r.y << 16),
            uintBitsToFloat(r.y & 0xffff0000u));
  hi = vec4(uintBitsToFloat(r.z << 16), uintBitsToFloat(r.z & 0xffff0000u), uintBitsToFloat(r.w << 16),
            uintBitsToFloat(r.w & 0xffff0000u));
}
// 8 weights from element e (a multiple of 8) as loaded (two uvec4 for f32, one for f16 and bf16), then unpacked
#if defined(W_IS_F32)
struct RawW { uvec4 a, b; };
#define RAW_ZERO RawW(uvec4(0u), uvec4(0u))
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 4u]; r.b = buf[(e) / 4u + 1u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { lo = uintBitsToFloat(r.a); hi = uintBitsToFloat(r.b); }
#elif defined(W_IS_BF16)
struct RawW { uvec4 a; };  // (16-bit weights: one uvec4 a piece, so a batch of loads holds no unused registers)
#define RAW_ZERO RawW(uvec4(0u))
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 8u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { unpack8_bf16(r.a, lo, hi); }
#else
struct RawW { uvec4 a; };
#define RAW_ZERO RawW(uvec4(0u))
#define LOAD_RAW(buf, e, r) { r.a = buf[(e) / 8u]; }
void unpack_w(RawW r, out vec4 lo, out vec4 hi) { unpack8_half(r.a, lo, hi); }
#endif
// The matrix-vector stages, by their number: A (q, k, v), C (o), D (gate, up), E (down).
const uint kStageQkv = 0u, kStageO = 1u, kStageGlu = 2u, kStageDown = 3u;
// A piece of a stage's weights: q's, k's or v's (w: kWq, kWk, kWv; uniform over the subgroup), o's, gate's (up's
// for the second row) or down's. (Each stage's own branches only: the kernel compiles in a fraction of the time.)
const uint kWq = 0u, kWk = 1u, kWv = 2u;
RawW load_piece(uint stage, bool second, uint w, uint e) {
  RawW r = RAW_ZERO;
  if (stage == kStageQkv) {
    if (w == kWq) LOAD_RAW(wq, e, r)
    else if (w == kWk) LOAD_RAW(wk, e, r)
    else LOAD_RAW(wv, e, r)
  } else if (stage == kStageO) {
    LOAD_RAW(wo, e, r)
  } else if (stage == kStageGlu) {
    if (second) LOAD_RAW(wu, e, r)
    else LOAD_RAW(wg, e, r)
  } else {
    LOAD_RAW(wd, e, r)
  }
  return r;
}

// 8 activations (ACT_T) from element e
#if defined(ACT_IS_F16)
#define LOAD_ACT(buf, e, lo, hi) unpack8_half(buf[(e) / 8u], lo, hi)
#else
#define LOAD_ACT(buf, e, lo, hi) lo = uintBitsToFloat(buf[(e) / 4u]); hi = uintBitsToFloat(buf[(e) / 4u + 1u])
#endif

// (a value as a store to ACT_T then a load gives: common/round_to.glsl)
#define round_act(f) ROUND_TO(ACT_T, f)

// ---- the grid barrier: every workgroup's writes before it visible to every workgroup after it. The first subgroup
// waits as a whole, its loop uniform (lane 0's reads broadcast). Not on lavapipe (ops::decode_layer_groups gives it
// one workgroup, which never waits): its shaders end every loop once an invocation has made 65535 iterations in all
// (gallivm's loop limiter), so a wait there would cut the stages' loops short.
void grid_barrier() {
  memoryBarrierBuffer();
  barrier();
  if (gl_SubgroupID == 0u) {
    uint generation = 0u;
    bool last = false;
    if (subgroupElect()) {
      generation = atomicLoad(sync_generation, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
      memoryBarrierBuffer();  // the generation read before this workgroup counts itself in
      last = atomicAdd(sync_count, 1u) + 1u == p.groups;
      if (last) {
        atomicExchange(sync_count, 0u);  // ready for the next barrier before anyone passes this one
        memoryBarrierBuffer();
        atomicAdd(sync_generation, 1u);
      }
    }
    generation = subgroupBroadcastFirst(generation);
    if (!subgroupBroadcastFirst(last)) {
      uint now = generation;
      while (now == generation) {
        uint seen = 0u;
        if (subgroupElect())  // a load, not a read-modify-write: polling adds no atomics to the line
          seen = atomicLoad(sync_generation, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
        now = subgroupBroadcastFirst(seen);
      }
    }
  }
  barrier();
  memoryBarrierBuffer();
}

// ---- stages A and D: x̂ = round_act((x * rstd) * w) staged in shared memory (common/matvec_norm_stage.glsl)
float norm_weight(bool second, uint k) {
  const uint type = second ? p.nw2_type : p.nw1_type;
  if (type == 0u) return uintBitsToFloat(second ? nw2[k] : nw1[k]);
  const uint half_bits = ((second ? nw2[k / 2u] : nw1[k / 2u]) >> (16u * (k & 1u))) & 0xffffu;
  return type == 1u ? unpackHalf2x16(half_bits).x : uintBitsToFloat(half_bits << 16);
}

void stage_norm(bool second) {
  const uint tid = gl_LocalInvocationID.x, K4 = p.K / 4u;
  float sum_sq = 0.0;
  for (uint i = tid; i < K4; i += gl_WorkGroupSize.x) {
    vec4 v = x4[i];
    sum_sq += dot(v, v);
  }
  const float r = 1.0 / sqrt(workgroup_sum(sum_sq) / float(p.K) + p.eps);
  for (uint g = tid; g < p.K / 8u; g += gl_WorkGroupSize.x) {
    const uint e = g * 8u;
    const vec4 lo = x4[e / 4u], hi = x4[e / 4u + 1u];
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    for (uint i = 0u; i < 8u; ++i) v[i] = (v[i] * r) * norm_weight(second, e + i);
#if defined(ACT_IS_F16)
    xs[g] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
                  packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
#else
    xs[2u * g] = floatBitsToUint(vec4(v[0], v[1], v[2], v[3]));
    xs[2u * g + 1u] = floatBitsToUint(vec4(v[4], v[5], v[6], v[7]));
#endif
  }
  barrier();
}

void load_x(uint e, out vec4 lo, out vec4 hi) {
#if defined(ACT_IS_F16)
  unpack8_half(xs[e / 8u], lo, hi);
#else
  lo = uintBitsToFloat(xs[e / 4u]);
  hi = uintBitsToFloat(xs[e / 4u + 1u]);
#endif
}

// ---- the matrix-vector stages' columns (A, C, D, E). A subgroup (or `split` of them) sums a column; it takes
// kCols columns at once (constant 5, 1 to kMaxCols) and loads kDepth pieces of each of their rows at once (constant
// 7, 1 to 4; twice that in the stages of one row a column, C and E, so that they hold as many loads as A and D), every
// load of a batch issued before any sum uses it, so that a lane has kCols·kDepth·2 memory round trips in flight
// instead of one or two: one workgroup a multiprocessor has 8 subgroups to stream the weights where the five
// dispatches have up to 64. Each column's sums keep their order, so the bits are the same whatever the two are.
layout(constant_id = 5) const uint kCols = 1u;
layout(constant_id = 7) const uint kDepth = 1u;
const uint kMaxCols = 4u, kMaxDepth = 8u;
// Pieces of a row a lane loads at once.
uint depth(bool two) { return two ? kDepth : 2u * kDepth; }

// A stage's columns: `split` subgroups a column, this lane's first K index and the stride between its pieces.
struct Columns { uint split, cols, k0, k_step; };
Columns columns(uint split) {
  return Columns(split, gl_NumSubgroups / split,
                 ((gl_SubgroupID % split) * gl_SubgroupSize + gl_SubgroupInvocationID) * 8u,
                 gl_SubgroupSize * 8u * split);
}
// Rounds of kCols columns: the workgroup's first, the step between rounds, and column c of this subgroup's batch
// (its c-th round as if it took one column at a time: first + c·step/kCols + its place).
uint first_round(Columns c) { return gl_WorkGroupID.x * c.cols; }
uint round_step(Columns c) { return p.groups * c.cols * kCols; }
uint batch_column(Columns c, uint first, uint i) { return first + i * p.groups * c.cols + gl_SubgroupID / c.split; }
// How many of the batch's columns are below N (a prefix: they increase with i).
uint live_columns(Columns c, uint first, uint N) {
  uint live = 0u;
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i)
    if (i < kCols && batch_column(c, first, i) < N) live = i + 1u;
  return live;
}

// A column's rows: their weights (kWq, kWk or kWv in stage A; up's for the second row in D, by load_piece), the
// first element of its first row, and of its second when `two`.
struct Rows { uint w, ea, eb; };
// The vector the rows are summed against: x̂ staged in shared memory, attn or gated.
const uint kFromStage = 0u, kFromAttn = 1u, kFromGated = 2u;
void load_vector(uint from, uint k, out vec4 lo, out vec4 hi) {
  if (from == kFromStage) {
    load_x(k, lo, hi);
  } else if (from == kFromAttn) {
    LOAD_ACT(attn16, k, lo, hi);
  } else {
    LOAD_ACT(gated16, k, lo, hi);
  }
}
// A lane's loads at kb: depth(two) pieces (k = kb, kb + k_step, ... below K) of each live column's rows, first (a)
// and second (b, when two rows).
struct Batch { RawW a[kMaxCols * kMaxDepth], b[kMaxCols * kMaxDepth]; };
Batch load_batch(uint stage, Rows rows[kMaxCols], uint live, bool two, uint kb, uint K, uint k_step) {
  Batch t;
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) {
    [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
      const uint k = kb + u * k_step;
      if (i < kCols && u < depth(two) && i < live && k < K) {
        t.a[i * kMaxDepth + u] = load_piece(stage, false, rows[i].w, rows[i].ea + k);
        if (two) t.b[i * kMaxDepth + u] = load_piece(stage, true, rows[i].w, rows[i].eb + k);
      }
    }
  }
  return t;
}
// The batch's pieces into the columns' sums (x: the first row, y: the second), in k order.
void sum_batch(Batch t, uint live, bool two, uint from, uint kb, uint K, uint k_step, inout vec2 acc[kMaxCols]) {
  [[unroll]] for (uint u = 0u; u < kMaxDepth; ++u) {
    const uint k = kb + u * k_step;
    if (u >= depth(two) || k >= K) break;
    vec4 xl, xh;
    load_vector(from, k, xl, xh);
    [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) {
      if (i >= kCols || i >= live) break;
      vec4 al, ah;
      unpack_w(t.a[i * kMaxDepth + u], al, ah);
      acc[i].x += dot(xl, al) + dot(xh, ah);
      if (two) {
        vec4 bl, bh;
        unpack_w(t.b[i * kMaxDepth + u], bl, bh);
        acc[i].y += dot(xl, bl) + dot(xh, bh);
      }
    }
  }
}

// The batch's columns' sums over their lanes and their `split` subgroups (in order): bit i of the result is set in
// the one lane that has column i's (common/matvec_norm_stage.glsl's column_sums). Every invocation calls it; a
// barrier after, when split.
uint column_sums(inout vec2 acc[kMaxCols], uint live, bool two, uint split) {
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i)
    if (i < kCols) acc[i] = vec2(subgroupAdd(acc[i].x), two ? subgroupAdd(acc[i].y) : 0.0);
  const uint all_live = (1u << live) - 1u;
  if (split == 1u) return subgroupElect() ? all_live : 0u;
  if (subgroupElect()) {
    [[unroll]] for (uint i = 0u; i < kMaxCols; ++i)
      if (i < kCols) split_sums[gl_SubgroupID * kMaxCols + i] = acc[i];
  }
  barrier();
  const bool mine = gl_SubgroupID % split == 0u && subgroupElect();
  if (mine) {
    [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) {
      if (i >= kCols) break;
      vec2 t = vec2(0.0);
      for (uint j = 0u; j < split; ++j) t += split_sums[(gl_SubgroupID + j) * kMaxCols + i];
      acc[i] = t;
    }
  }
  barrier();  // read before the next batch's sums are written
  return mine ? all_live : 0u;
}

// ---- stage A: one subgroup (or kSplitQkv) a pair (i, i + D/2) of a head of q, k or v
uint qkv_pairs() { return (p.heads + 2u * p.kv_heads) * p.half_d; }
// The pair's weights (kWq, kWk or kWv), its head in them, its rows.
void pair_rows(uint pair, out uint w, out uint h, out uint lo, out uint hi) {
  const uint head = pair / p.half_d, i = pair % p.half_d;
  w = head < p.heads ? kWq : head < p.heads + p.kv_heads ? kWk : kWv;
  h = w == kWq ? head : w == kWk ? head - p.heads : head - p.heads - p.kv_heads;
  lo = h * 2u * p.half_d + i;
  hi = lo + p.half_d;
}

// The pair's sums: biases, rounding as stored, RoPE (q and k), then into q or the cache.
void store_pair(uint pair, vec2 acc) {
  const uint D = 2u * p.half_d, i = pair % p.half_d;
  const uint d0 = p.slot >= 0 ? uint(max(offsets[p.slot], 0)) : 0u;
  uint which, h, lo, hi;  // which: 0 q, 1 k, 2 v
  pair_rows(pair, which, h, lo, hi);
  float v0 = acc.x, v1 = acc.y;
  if ((p.flags & 1u) != 0u) {
    v0 += TO_F32(W_T, which == 0u ? bq[lo] : which == 1u ? bk[lo] : bv[lo]);
    v1 += TO_F32(W_T, which == 0u ? bq[hi] : which == 1u ? bk[hi] : bv[hi]);
  }
  v0 = round_act(v0);  // the products as stored before RoPE reads them
  v1 = round_act(v1);
  if (which == 2u) {
    if (d0 < p.cache_rows) {
      const uint c = d0 * p.kv_heads * D;
      v_cache[c + lo] = FROM_F32(ACT_T, v0);
      v_cache[c + hi] = FROM_F32(ACT_T, v1);
    }
    return;
  }
  precise float a = float(pos[0]) * inv_freq[i];
  vec2 sc = sin_cos(a);
  const float r0 = v0 * sc.y - v1 * sc.x, r1 = v1 * sc.y + v0 * sc.x;
  if (which == 0u) {
    q[lo] = FROM_F32(ACT_T, r0);
    q[hi] = FROM_F32(ACT_T, r1);
  } else if (d0 < p.cache_rows) {
    const uint c = d0 * p.kv_heads * D;
    k_cache[c + lo] = FROM_F32(ACT_T, r0);
    k_cache[c + hi] = FROM_F32(ACT_T, r1);
  }
}

// ---- stage B: attention, shaders/attention_split.comp's PARTIAL (kVec, kLastCombines) a 64-invocation part
// A part's maximum and sum: its subgroups' results in order, as common/reduce.glsl over a 64-invocation workgroup.
// Every invocation of the workgroup calls them.
float part_max(float v, uint at) {
  v = subgroupMax(v);
  barrier();
  if (subgroupElect()) part_scratch[gl_SubgroupID] = v;
  barrier();
  const uint n = kPart / gl_SubgroupSize, first = at * n;
  float m = part_scratch[first];
  for (uint i = 1u; i < n; ++i) m = max(m, part_scratch[first + i]);
  return m;
}
float part_sum(float v, uint at) {
  v = subgroupAdd(v);
  barrier();
  if (subgroupElect()) part_scratch[gl_SubgroupID] = v;
  barrier();
  const uint n = kPart / gl_SubgroupSize, first = at * n;
  float total = 0.0;
  for (uint i = 0u; i < n; ++i) total += part_scratch[first + i];
  return total;
}

#if defined(ACT_IS_F16)
#define KV8_HALF
#endif
#include "common/kv8.glsl"

// Head h's output from its parts (attention_split.comp's combine), by part `at` where has_unit (every part calls it).
void combine(uint at, uint t, bool has_unit, uint h, uint used) {
  const uint D = 2u * p.half_d, stride = D + 2u, part0 = h * p.splits * stride;
  // Loaded at once, as attention_split.comp's combine: this invocation's first part's maximum and sum (part t), and
  // the first batch of parts' values of each of its outputs.
  const bool own = has_unit && t < used;
  const float m_own = own ? part[part0 + t * stride + D] : -3.0e38;
  const float l_own = own ? part[part0 + t * stride + D + 1u] : 0.0;
  float first_v[MAX_D / kPart][kBatch];
  [[unroll]] for (uint i = 0u; i < MAX_D / kPart; ++i)
    [[unroll]] for (uint u = 0u; u < kBatch; ++u)
      first_v[i][u] = has_unit && t + i * kPart < D && u < used ? part[part0 + u * stride + t + i * kPart] : 0.0;
  float mx_part = m_own;
  if (has_unit)
    for (uint s = t + kPart; s < used; s += kPart) mx_part = max(mx_part, part[part0 + s * stride + D]);
  const float mx = part_max(mx_part, at);
  float total_part = own ? l_own * exp(m_own - mx) : 0.0;
  if (has_unit)
    for (uint s = t + kPart; s < used; s += kPart)
      total_part += part[part0 + s * stride + D + 1u] * exp(part[part0 + s * stride + D] - mx);
  const float total = part_sum(total_part, at);
  float acc[MAX_D / kPart];
  [[unroll]] for (uint i = 0u; i < MAX_D / kPart; ++i) acc[i] = 0.0;
  for (uint s0 = 0u; s0 < used; s0 += kPart * 8u) {  // the weights of up to 512 parts at a time, in pv
    const uint n = min(used - s0, kPart * 8u);
    barrier();
    if (has_unit)
      for (uint s = t; s < n; s += kPart)
        pv[at][s] = s0 == 0u && s == t ? exp(m_own - mx) : exp(part[part0 + (s0 + s) * stride + D] - mx);
    barrier();
    if (!has_unit) continue;
    [[unroll]] for (uint i = 0u; i < MAX_D / kPart; ++i) {
      const uint d = t + i * kPart;
      if (d >= D) break;
      for (uint s = 0u; s < n; s += kBatch) {
        float v[kBatch];
        [[unroll]] for (uint u = 0u; u < kBatch; ++u)
          v[u] = s0 == 0u && s == 0u ? first_v[i][u] : s + u < n ? part[part0 + (s0 + s + u) * stride + d] : 0.0;
        [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
          if (s + u >= n) break;
          acc[i] += v[u] * pv[at][s + u];
        }
      }
    }
  }
  if (!has_unit) return;
  [[unroll]] for (uint i = 0u; i < MAX_D / kPart; ++i) {
    const uint d = t + i * kPart;
    if (d >= D) break;
    attn[h * D + d] = FROM_F32(ACT_T, acc[i] / total);
  }
}

void stage_attention() {
  const uint D = 2u * p.half_d, at = gl_LocalInvocationID.x / kPart, t = gl_LocalInvocationID.x % kPart;
  const uint n_keys = min(uint(max(offsets[p.slot], 0)) + 1u, p.cache_rows);
  const uint used = min(p.splits, (n_keys + kPart - 1u) / kPart), units = p.heads * used;
  const uint key_stride = p.kv_heads * D;
  for (uint first = gl_WorkGroupID.x * kParts; first < units; first += p.groups * kParts) {  // uniform
    const uint unit = first + at;
    const bool has_unit = unit < units;
    const uint h = has_unit ? unit / used : 0u, s = has_unit ? unit % used : 0u;
    const uint key0 = (h / (p.heads / p.kv_heads)) * D, base = (h * p.splits + s) * (D + 2u), first_key = s * kPart;
    const uint j = first_key + t;
    const bool live = has_unit && j < n_keys;
    const uint count = has_unit ? min(kPart, n_keys - first_key) : 0u;
    const uint chunks = D / 8u, subsets = kPart / chunks, c = t % chunks, set = t / chunks;
    // The first batch of this invocation's key pieces and of its values, loaded with q (attention_split.comp)
    Raw8 kr[kBatch], vr[kBatch];
    if (live)
      [[unroll]] for (uint u = 0u; u < kBatch; ++u)
        if (8u * u < D) kr[u] = load8(true, key0 + j * key_stride + 8u * u);
    if (set < subsets)
      [[unroll]] for (uint u = 0u; u < kBatch; ++u)
        if (set + u * subsets < count) vr[u] = load8(false, key0 + (first_key + set + u * subsets) * key_stride + c * 8u);
    barrier();  // the previous unit's readers are done with q_row, probs and pv
    if (has_unit)
      for (uint d = t; d < D; d += kPart) q_row[at][d] = TO_F32(ACT_T, q[h * D + d]);
    barrier();
    float score = -3.0e38;
    if (live) {
      vec4 acc = vec4(0.0);
      for (uint i0 = 0u; i0 < D; i0 += 8u * kBatch) {
        if (i0 > 0u)
          [[unroll]] for (uint u = 0u; u < kBatch; ++u)
            if (i0 + 8u * u < D) kr[u] = load8(true, key0 + j * key_stride + i0 + 8u * u);
        [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
          const uint i = i0 + 8u * u;
          if (i >= D) break;
          vec4 lo, hi;
          unpack8(kr[u], lo, hi);
          acc += vec4(q_row[at][i], q_row[at][i + 1u], q_row[at][i + 2u], q_row[at][i + 3u]) * lo;
          acc += vec4(q_row[at][i + 4u], q_row[at][i + 5u], q_row[at][i + 6u], q_row[at][i + 7u]) * hi;
        }
      }
      score = p.scale * ((acc.x + acc.y) + (acc.z + acc.w));
    }
    const float m = part_max(score, at);
    const float e = live ? exp(score - m) : 0.0;
    const float l = part_sum(e, at);
    probs[at][t] = e;
    barrier();
    vec4 lo_sum = vec4(0.0), hi_sum = vec4(0.0);
    if (has_unit && set < subsets) {
      for (uint jj0 = set; jj0 < count; jj0 += kBatch * subsets) {
        if (jj0 > set)
          [[unroll]] for (uint u = 0u; u < kBatch; ++u)
            if (jj0 + u * subsets < count)
              vr[u] = load8(false, key0 + (first_key + jj0 + u * subsets) * key_stride + c * 8u);
        [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
          const uint jj = jj0 + u * subsets;
          if (jj >= count) break;
          vec4 lo, hi;
          unpack8(vr[u], lo, hi);
          lo_sum += probs[at][jj] * lo;
          hi_sum += probs[at][jj] * hi;
        }
      }
      for (uint i = 0u; i < 4u; ++i) {
        pv[at][set * D + c * 8u + i] = lo_sum[i];
        pv[at][set * D + c * 8u + 4u + i] = hi_sum[i];
      }
    }
    barrier();
    if (has_unit) {
      for (uint d = t; d < D; d += kPart) {
        float a = 0.0;
        for (uint i = 0u; i < subsets; ++i) a += pv[at][i * D + d];
        part[base + d] = a;
      }
      if (t == 0u) {
        part[base + D] = m;
        part[base + D + 1u] = l;
      }
    }
    memoryBarrierBuffer();  // this part's results, visible before it counts itself done
    barrier();
    if (t == 0u) {
      bool last = false;
      if (has_unit) {
        last = atomicAdd(done[h], 1u) + 1u == used;
        if (last) done[h] = 0u;  // the head's other parts have all counted: ready for the next token
      }
      last_of_head[at] = last;
    }
    barrier();
    const bool combines = last_of_head[at];
    if (combines) memoryBarrierBuffer();
    combine(at, t, combines, h, used);
  }
}

// ---- the matrix-vector stages
#if defined(GLU_SILU)
float act(float g) { return silu(g); }
#else
float act(float g) { return gelu_tanh(g); }
#endif

Columns stage_columns(uint stage) {
  return columns(stage == kStageQkv ? kSplitQkv : stage == kStageO ? kSplitO : stage == kStageGlu ? kSplitGlu
                                                                                                     : kSplitDown);
}
uint stage_width(uint stage) { return stage == kStageQkv ? qkv_pairs() : stage == kStageGlu ? p.I : p.K; }
uint stage_reduction(uint stage) {
  return stage == kStageO ? p.heads * 2u * p.half_d : stage == kStageDown ? p.I : p.K;
}
bool two_rows(uint stage) { return stage == kStageQkv || stage == kStageGlu; }
// The rows of the round's columns (a pair's two rows in q, k or v; gate's and up's; o's or down's one).
void stage_rows(uint stage, Columns c, uint first, out Rows rows[kMaxCols]) {
  const uint K = stage_reduction(stage);
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) {
    const uint n = batch_column(c, first, i);
    if (stage == kStageQkv) {
      uint w, h, lo, hi;
      pair_rows(min(n, qkv_pairs() - 1u), w, h, lo, hi);
      rows[i] = Rows(w, lo * K, hi * K);
    } else if (stage == kStageGlu) {
      rows[i] = Rows(0u, n * K, n * K);
    } else {
      rows[i] = Rows(0u, n * K, 0u);
    }
  }
}
// The first batch of the round at `first`: loaded ahead of what the sums wait for (the grid barrier before the stage,
// the norm's staging), since the weights depend on neither.
Batch first_batch(uint stage, uint first) {
  const Columns c = stage_columns(stage);
  Rows rows[kMaxCols];
  stage_rows(stage, c, first, rows);
  const uint live = live_columns(c, first, stage_width(stage));
  return load_batch(stage, rows, live, two_rows(stage), c.k0, stage_reduction(stage), c.k_step);
}

// One round of the stage's columns, its first batch `t` loaded: sums, then each column's result where it belongs:
//   A  biases, RoPE, into q or the caches (store_pair)
//   C, E  x(n) += Σ_k a(k)·W(n, k)  (shaders/matvec8.comp; gemm_store's accumulation, beta 1)
//   D  gated = act(round_act(x̂·Wgᵀ)) · round_act(x̂·Wuᵀ)
void stage_round(uint stage, uint first, Batch t) {
  const Columns c = stage_columns(stage);
  const uint K = stage_reduction(stage), live = live_columns(c, first, stage_width(stage));
  const bool two = two_rows(stage);
  const uint from = stage == kStageO ? kFromAttn : stage == kStageDown ? kFromGated : kFromStage;
  Rows rows[kMaxCols];
  stage_rows(stage, c, first, rows);
  vec2 acc[kMaxCols];
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) acc[i] = vec2(0.0);
  sum_batch(t, live, two, from, c.k0, K, c.k_step, acc);
  for (uint kb = c.k0 + depth(two) * c.k_step; kb < K; kb += depth(two) * c.k_step)
    sum_batch(load_batch(stage, rows, live, two, kb, K, c.k_step), live, two, from, kb, K, c.k_step, acc);
  const uint mine = column_sums(acc, live, two, c.split);
  [[unroll]] for (uint i = 0u; i < kMaxCols; ++i) {
    if (i >= kCols || (mine & (1u << i)) == 0u) continue;
    const uint n = batch_column(c, first, i);
    if (stage == kStageQkv) store_pair(n, acc[i]);
    else if (stage == kStageGlu) gated[n] = FROM_F32(ACT_T, act(round_act(acc[i].x)) * round_act(acc[i].y));
    else x1[n] = fma(1.0, x1[n], acc[i].x);
  }
}

// The stage's rounds, the first with its batch already loaded (`t`; the others load theirs).
void stage_rounds(uint stage, Batch t) {
  const Columns c = stage_columns(stage);
  const uint N = stage_width(stage), first = first_round(c);
  if (first >= N) return;  // (uniform)
  stage_round(stage, first, t);
  for (uint f = first + round_step(c); f < N; f += round_step(c)) stage_round(stage, f, first_batch(stage, f));
}

// The stages that run (constant 8; bits A 1, B 2, C 4, D 8, E 16): all, except when timing a stage's share
// (LORASTUDIO_DECODE_STAGES, measurement only: the layer's output is then wrong). The grid barriers always run.
layout(constant_id = 8) const uint kStages = 31u;

void main() {
  Batch t;
  if ((kStages & 1u) != 0u) {
    t = first_batch(kStageQkv, first_round(stage_columns(kStageQkv)));
    stage_norm(false);
    stage_rounds(kStageQkv, t);
  }
  grid_barrier();
  if ((kStages & 2u) != 0u) stage_attention();
  if ((kStages & 4u) != 0u) t = first_batch(kStageO, first_round(stage_columns(kStageO)));
  grid_barrier();
  if ((kStages & 4u) != 0u) stage_rounds(kStageO, t);
  if ((kStages & 8u) != 0u) t = first_batch(kStageGlu, first_round(stage_columns(kStageGlu)));
  grid_barrier();
  if ((kStages & 8u) != 0u) {
    stage_norm(true);
    stage_rounds(kStageGlu, t);
  }
  if ((kStages & 16u) != 0u) t = first_batch(kStageDown, first_round(stage_columns(kStageDown)));
  grid_barrier();
  if ((kStages & 16u) != 0u) stage_rounds(kStageDown, t);
}
