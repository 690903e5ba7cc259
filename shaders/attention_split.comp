#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Decoding attention over a KV cache, split over the keys (flash-decoding) so that a handful of query
// rows still fill the GPU. Same math as shaders/attention.comp with past read from the device:
// query row (b, t, h) sees keys j <= past + t, past = past_buf[0], or past_buf[b] with per_seq (batched
// generation: each batch row a sequence of its own, with its own fill level). Two kernels:
//   PARTIAL: workgroup (row, s) takes keys [s * WG, s * WG + WG) ∩ [0, n_keys): thread j scores key j,
//     m = max score, l = sum exp(s_j - m), o[d] = sum exp(s_j - m) v_j[d]; writes (m, l, o) to scratch
//     [rows, splits, D + 2] (l = 0 when the split holds no key). With kVec (constant 1; D a multiple of 8) the
//     keys and values are read 16 bytes at a time: a thread scores its key in D/8 loads, and o is summed by
//     (8 values of d) × (a subset of the keys) per thread, the subsets then added in order: a chain of D/8 + 8
//     loads a thread instead of 2·D (session 20: 17 us a layer at 0.5B on the H200, 30 at 7B, one load at a time).
//   COMBINE: workgroup per row: M = max m_s, L = sum l_s exp(m_s - M), o = sum o_s exp(m_s - M) / L.
//   Every loop over keys, values or partials issues kBatch loads before it uses any (a constant trip count the
//   driver unrolls): a loop that adds each load as it comes waits out a memory round trip a step, and the
//   whole kernel is such chains (a decode step's attention is latency, not bytes). The sums keep their order.
//   Every load that waits on nothing is issued before any is used: a partial's q, the first batch of its key's pieces
//   and the first batch of its values go out together (one memory round trip where D <= 8·kBatch and the split's
//   keys fit a batch, three before), and the combine's maxima, sums and first batch of partial outputs together (one
//   where the row has up to kBatch splits, four before). The same sums in the same order: the same bits.
//   With kLastCombines (PARTIAL; constant 2), the combine is not a dispatch of its own: each workgroup with keys
//   counts itself done in done[row] after its partials are visible, and the last of the row's combines them and
//   sets the count back to 0 for the next run (one dependent stage a layer less when decoding).
#include "common/types.glsl"
#include "common/reduce.glsl"

#define WG 64
#define MAX_D 256
layout(local_size_x = WG) in;

layout(binding = 0) readonly buffer Q { STORE(T) q[]; };
layout(binding = 1) readonly buffer K { STORE(T) k[]; };
layout(binding = 2) readonly buffer V { STORE(T) v[]; };
layout(binding = 3) buffer O { STORE(T) o[]; };
layout(binding = 4) coherent buffer Scratch { float part[]; };
layout(binding = 5) readonly buffer Past { int past_buf[]; };
layout(binding = 6) coherent buffer Done { uint done[]; };  // kLastCombines: workgroups of a row done, then 0
layout(push_constant) uniform Params { uint B, T, S, H, KV, D; float scale; uint splits, per_seq; } p;

shared float q_row[MAX_D];
shared float probs[WG];

layout(constant_id = 1) const uint kVec = 0u;
layout(constant_id = 2) const uint kLastCombines = 0u;
shared bool last_of_row;
// k and v 16 bytes at a time (kVec)
layout(binding = 1) readonly buffer K16 { uvec4 k16[]; };
layout(binding = 2) readonly buffer V16 { uvec4 v16[]; };
shared float pv[WG * 8u];  // [key subset][D] partial sums of o (kVec); in the combine, the splits' weights
// Loads in flight a thread, in every loop: with f16, all of a key's pieces and of a thread's values up to D = 128 (the
// 7B shape's heads) in one batch; f32 (exact inference) half as many, for the registers.
#if defined(T_IS_F16)
const uint kBatch = 16u;
#else
const uint kBatch = 8u;
#endif

#if defined(T_IS_F16)
#define KV8_HALF
#endif
#include "common/kv8.glsl"

const uint kCombineBatch = 8u;  // the combine's loads in flight a thread, for each of its up to MAX_D / WG outputs

// o[row] from the row's partials (COMBINE, or the last partial workgroup of the row). The splits' maxima and
// weights are read a split a thread; each output value then sums its splits in order, kBatch loads at a time.
void combine(uint row, uint n_keys, uint tid) {
  const uint used = min(p.splits, (n_keys + WG - 1u) / WG), stride = p.D + 2u, part0 = row * p.splits * stride;
  // Loaded at once: the first split's maximum and sum of this thread (split tid), and the first batch of splits'
  // values of each of its outputs.
  const bool own = tid < used;
  const float m_own = own ? part[part0 + tid * stride + p.D] : -3.0e38;
  const float l_own = own ? part[part0 + tid * stride + p.D + 1u] : 0.0;
  float first_v[MAX_D / WG][kCombineBatch];
  [[unroll]] for (uint i = 0u; i < MAX_D / WG; ++i)
    [[unroll]] for (uint u = 0u; u < kCombineBatch; ++u)
      first_v[i][u] = tid + i * WG < p.D && u < used ? part[part0 + u * stride + tid + i * WG] : 0.0;
  float mx_part = m_own;
  for (uint s = tid + WG; s < used; s += WG) mx_part = max(mx_part, part[part0 + s * stride + p.D]);
  const float mx = workgroup_max(mx_part);
  float total_part = own ? l_own * exp(m_own - mx) : 0.0;
  for (uint s = tid + WG; s < used; s += WG)
    total_part += part[part0 + s * stride + p.D + 1u] * exp(part[part0 + s * stride + p.D] - mx);
  const float total = workgroup_sum(total_part);
  float acc[MAX_D / WG];
  [[unroll]] for (uint i = 0u; i < MAX_D / WG; ++i) acc[i] = 0.0;
  for (uint s0 = 0u; s0 < used; s0 += WG * 8u) {  // the weights of up to 512 splits at a time, in pv
    const uint n = min(used - s0, WG * 8u);
    barrier();  // the previous pass's readers (or the partial's) are done with pv
    for (uint s = tid; s < n; s += WG)
      pv[s] = s0 == 0u && s == tid ? exp(m_own - mx) : exp(part[part0 + (s0 + s) * stride + p.D] - mx);
    barrier();
    [[unroll]] for (uint i = 0u; i < MAX_D / WG; ++i) {
      const uint d = tid + i * WG;
      if (d >= p.D) break;
      for (uint s = 0u; s < n; s += kCombineBatch) {
        float v[kCombineBatch];
        [[unroll]] for (uint u = 0u; u < kCombineBatch; ++u)
          v[u] = s0 == 0u && s == 0u ? first_v[i][u] : s + u < n ? part[part0 + (s0 + s + u) * stride + d] : 0.0;
        [[unroll]] for (uint u = 0u; u < kCombineBatch; ++u) {
          if (s + u >= n) break;
          acc[i] += v[u] * pv[s + u];
        }
      }
    }
  }
  [[unroll]] for (uint i = 0u; i < MAX_D / WG; ++i) {
    const uint d = tid + i * WG;
    if (d >= p.D) break;
    o[row * p.D + d] = FROM_F32(T, acc[i] / total);
  }
}

void main() {
  const uint row = gl_WorkGroupID.x;  // = (b * T + t) * H + h
  const uint tid = gl_LocalInvocationID.x;
  const uint h = row % p.H, t = (row / p.H) % p.T, b = row / (p.H * p.T);
  const uint n_keys = min(uint(max(past_buf[p.per_seq != 0u ? b : 0u], 0)) + t + 1u, p.S);
#if defined(PARTIAL)
  const uint s = gl_WorkGroupID.y;
  const uint g = h / (p.H / p.KV);
  const uint key_stride = p.KV * p.D, key0 = (b * p.S * p.KV + g) * p.D;
  const uint base = (row * p.splits + s) * (p.D + 2u);
  const uint first = s * WG;
  if (first >= n_keys) {  // uniform: nothing to see here
    if (tid == 0u) part[base + p.D + 1u] = 0.0;
    return;
  }
  const uint j = first + tid;
  const bool live = j < n_keys;
  const uint count = min(uint(WG), n_keys - first);
  // kVec: the first batch of this thread's key pieces and of its values (the values' subset `set` of the split's keys,
  // its 8 values of d from c·8) go out with q's loads, before anything waits.
  const uint chunks = p.D / 8u, subsets = WG / max(chunks, 1u), c = tid % max(chunks, 1u), set = tid / max(chunks, 1u);
  const bool sums_values = kVec != 0u && set < subsets;
  Raw8 kr[kBatch], vr[kBatch];
  if (live && kVec != 0u)
    [[unroll]] for (uint u = 0u; u < kBatch; ++u)
      if (8u * u < p.D) kr[u] = load8(true, key0 + j * key_stride + 8u * u);
  if (sums_values)
    [[unroll]] for (uint u = 0u; u < kBatch; ++u)
      if (set + u * subsets < count) vr[u] = load8(false, key0 + (first + set + u * subsets) * key_stride + c * 8u);
  for (uint d = tid; d < p.D; d += WG) q_row[d] = TO_F32(T, q[row * p.D + d]);
  barrier();
  float score = -3.0e38;
  if (live && kVec != 0u) {
    vec4 acc = vec4(0.0);
    for (uint i0 = 0u; i0 < p.D; i0 += 8u * kBatch) {
      if (i0 > 0u)
        [[unroll]] for (uint u = 0u; u < kBatch; ++u)
          if (i0 + 8u * u < p.D) kr[u] = load8(true, key0 + j * key_stride + i0 + 8u * u);
      [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
        const uint i = i0 + 8u * u;
        if (i >= p.D) break;
        vec4 lo, hi;
        unpack8(kr[u], lo, hi);
        acc += vec4(q_row[i], q_row[i + 1u], q_row[i + 2u], q_row[i + 3u]) * lo;
        acc += vec4(q_row[i + 4u], q_row[i + 5u], q_row[i + 6u], q_row[i + 7u]) * hi;
      }
    }
    score = p.scale * ((acc.x + acc.y) + (acc.z + acc.w));
  } else if (live) {
    precise vec4 acc = vec4(0.0);
    for (uint i = 0u; i < p.D; ++i) acc[i & 3u] += q_row[i] * TO_F32(T, k[key0 + j * key_stride + i]);
    score = p.scale * ((acc.x + acc.y) + (acc.z + acc.w));
  }
  const float m = workgroup_max(score);
  const float e = live ? exp(score - m) : 0.0;
  const float l = workgroup_sum(e);
  probs[tid] = e;
  barrier();
  if (kVec != 0u) {
    vec4 lo_sum = vec4(0.0), hi_sum = vec4(0.0);
    if (sums_values) {
      for (uint jj0 = set; jj0 < count; jj0 += kBatch * subsets) {
        if (jj0 > set)
          [[unroll]] for (uint u = 0u; u < kBatch; ++u)
            if (jj0 + u * subsets < count) vr[u] = load8(false, key0 + (first + jj0 + u * subsets) * key_stride + c * 8u);
        [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
          const uint jj = jj0 + u * subsets;
          if (jj >= count) break;
          vec4 lo, hi;
          unpack8(vr[u], lo, hi);
          lo_sum += probs[jj] * lo;
          hi_sum += probs[jj] * hi;
        }
      }
      for (uint i = 0u; i < 4u; ++i) {
        pv[set * p.D + c * 8u + i] = lo_sum[i];
        pv[set * p.D + c * 8u + 4u + i] = hi_sum[i];
      }
    }
    barrier();
    for (uint d = tid; d < p.D; d += WG) {
      float a = 0.0;
      for (uint i = 0u; i < subsets; ++i) a += pv[i * p.D + d];
      part[base + d] = a;
    }
  } else {
    for (uint d = tid; d < p.D; d += WG) {
      float a = 0.0;
      for (uint jj = 0u; jj < count; ++jj) a += probs[jj] * TO_F32(T, v[key0 + (first + jj) * key_stride + d]);
      part[base + d] = a;
    }
  }
  if (tid == 0u) {
    part[base + p.D] = m;
    part[base + p.D + 1u] = l;
  }
  if (kLastCombines != 0u) {
    memoryBarrierBuffer();  // this workgroup's partials, visible before it counts itself done
    barrier();
    if (tid == 0u) {
      const uint used = min(p.splits, (n_keys + WG - 1u) / WG);
      last_of_row = atomicAdd(done[row], 1u) + 1u == used;
      if (last_of_row) done[row] = 0u;  // the others of the row have all counted: ready for the next run
    }
    barrier();
    if (last_of_row) {
      memoryBarrierBuffer();
      combine(row, n_keys, tid);
    }
  }
#else  // COMBINE
  combine(row, n_keys, tid);
#endif
}
