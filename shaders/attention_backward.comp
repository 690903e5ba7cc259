#version 450
#extension GL_GOOGLE_include_directive : require
// Attention backward, two kernels (all f32). Query t sees keys j <= past + t; query head h uses kv head
// g = h / (H / KV). With
//   p = exp(scale * q[b,t,h,:] . k[b,j,g,:] - lse[b,h,t]),   delta[b,h,t] = do[b,t,h,:] . o[b,t,h,:],
//   ds = p * (do[b,t,h,:] . v[b,j,g,:] - delta[b,h,t]):
// BACKWARD_DQ, one workgroup per query row (b, t, h); also writes delta for the second kernel:
//   dq[b,t,h,:] = scale * sum_j ds * k[b,j,g,:]
// BACKWARD_DKDV, one workgroup per key row (b, j, g), over the group's heads and the queries that see j:
//   dk[b,j,g,:] = scale * sum_{h in g} sum_t ds * q[b,t,h,:],   dv[b,j,g,:] = sum_{h in g} sum_t p * do[b,t,h,:]
// The sum runs in chunks of WG (keys or queries): each thread computes one p and ds into shared memory,
// then thread `tid` accumulates dims d = tid + WG * i over the chunk. Each chunk is summed on its own
// and then added to the total (blocked summation: rounding grows far more slowly than in one running
// sum over thousands of terms). Fixed order: deterministic.
#include "common/reduce.glsl"

#define WG 64
#define MAX_D 256
#define DIMS_PER_THREAD (MAX_D / WG)
layout(local_size_x = WG) in;

// window > 0: a sliding window, query t sees only keys past + t - window < j (ops/attention.h).
layout(push_constant) uniform Params { uint B, T, S, H, KV, D; float scale; uint past_on_device; uint window; } p;

// result = sum over i_ < p.D of (A) * (B), with A and B written in terms of i_. Four interleaved partial
// sums: rounding error grows more slowly than in one running sum. `precise` (no fma contraction) makes
// every dot product round the same way, so that do.v and delta = do.o cancel exactly where o == v (a
// query that sees a single key, whose true gradient is 0). Same as in attention.comp.
#define DOT_D(result, A, B)                                                   \
  {                                                                           \
    precise vec4 part_ = vec4(0.0);                                           \
    for (uint i_ = 0u; i_ < p.D; ++i_) part_[i_ & 3u] += (A) * (B);           \
    result = (part_.x + part_.y) + (part_.z + part_.w);                       \
  }

#ifdef BACKWARD_DQ
layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { float k[]; };
layout(binding = 2) readonly buffer V { float v[]; };
layout(binding = 3) readonly buffer O { float o[]; };
layout(binding = 4) readonly buffer DO { float do_[]; };
layout(binding = 5) readonly buffer Lse { float lse[]; };
layout(binding = 6) writeonly buffer DQ { float dq[]; };
layout(binding = 7) writeonly buffer Delta { float delta[]; };

shared float q_row[MAX_D];
shared float do_row[MAX_D];
shared float ds_chunk[WG];

void main() {
  // Rows are folded into x and y to keep each group count <= 65535.
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // = (b * T + t) * H + h
  if (row >= p.B * p.T * p.H) return;  // uniform across the workgroup
  uint h = row % p.H, t = (row / p.H) % p.T, b = row / (p.H * p.T);
  uint g = h / (p.H / p.KV);
  uint tid = gl_LocalInvocationID.x;
  uint n_keys = p.S - p.T + t + 1u;        // keys 0 .. past + t
  uint first = p.window != 0u && n_keys > p.window ? n_keys - p.window : 0u;  // (window)
  uint key_stride = p.KV * p.D;            // from key j to key j + 1 of the same kv head
  uint key0 = (b * p.S * p.KV + g) * p.D;  // key 0 of kv head g
  uint stat = (b * p.H + h) * p.T + t;     // index into lse and delta

  for (uint d = tid; d < p.D; d += WG) {
    q_row[d] = q[row * p.D + d];
    do_row[d] = do_[row * p.D + d];
  }
  barrier();
  float dlt;
  DOT_D(dlt, do_row[i_], o[row * p.D + i_]);  // every thread, in the same order as do.v below
  if (tid == 0u) delta[stat] = dlt;
  float row_lse = lse[stat];

  float acc[DIMS_PER_THREAD];
  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) acc[i] = 0.0;

  for (uint c0 = first; c0 < n_keys; c0 += WG) {
    uint j = c0 + tid;
    float ds = 0.0;
    if (j < n_keys) {  // masked keys are never read
      uint kj = key0 + j * key_stride;
      float qk, dov;
      DOT_D(qk, q_row[i_], k[kj + i_]);
      DOT_D(dov, do_row[i_], v[kj + i_]);
      ds = exp(p.scale * qk - row_lse) * (dov - dlt);
    }
    ds_chunk[tid] = ds;
    barrier();
    uint chunk = min(uint(WG), n_keys - c0);
    for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
      uint d = tid + i * WG;
      if (d >= p.D) break;
      float a = 0.0;
      for (uint jj = 0u; jj < chunk; ++jj) a += ds_chunk[jj] * k[key0 + (c0 + jj) * key_stride + d];
      acc[i] += a;
    }
    barrier();  // ds_chunk is rewritten by the next chunk
  }

  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
    uint d = tid + i * WG;
    if (d < p.D) dq[row * p.D + d] = p.scale * acc[i];
  }
}
#endif  // BACKWARD_DQ

#ifdef BACKWARD_DKDV
layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { float k[]; };
layout(binding = 2) readonly buffer V { float v[]; };
layout(binding = 3) readonly buffer DO { float do_[]; };
layout(binding = 4) readonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Delta { float delta[]; };
layout(binding = 6) writeonly buffer DK { float dk[]; };
layout(binding = 7) writeonly buffer DV { float dv[]; };

shared float k_row[MAX_D];
shared float v_row[MAX_D];
shared float p_chunk[WG];
shared float ds_chunk[WG];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // = (b * S + j) * KV + g
  if (row >= p.B * p.S * p.KV) return;  // uniform across the workgroup
  uint g = row % p.KV, j = (row / p.KV) % p.S, b = row / (p.KV * p.S);
  uint tid = gl_LocalInvocationID.x;
  uint past = p.S - p.T;
  uint t_first = j > past ? j - past : 0u;  // the first query that sees key j
  // the last one + 1: query t sees j while past + t - j < window
  uint t_end = p.window != 0u ? min(p.T, j + p.window > past ? j + p.window - past : 0u) : p.T;
  uint group = p.H / p.KV;
  uint query_stride = p.H * p.D;            // from query t to t + 1 of the same head

  for (uint d = tid; d < p.D; d += WG) {
    k_row[d] = k[row * p.D + d];
    v_row[d] = v[row * p.D + d];
  }
  barrier();

  float dk_acc[DIMS_PER_THREAD], dv_acc[DIMS_PER_THREAD];
  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
    dk_acc[i] = 0.0;
    dv_acc[i] = 0.0;
  }

  for (uint h = g * group; h < (g + 1u) * group; ++h) {
    uint q0 = (b * p.T * p.H + h) * p.D;  // query 0 of head h
    for (uint c0 = t_first; c0 < t_end; c0 += WG) {
      uint t = c0 + tid;
      float pr = 0.0, ds = 0.0;
      if (t < t_end) {
        uint qt = q0 + t * query_stride;
        float qk, dov;
        DOT_D(qk, q[qt + i_], k_row[i_]);
        DOT_D(dov, do_[qt + i_], v_row[i_]);
        uint stat = (b * p.H + h) * p.T + t;
        pr = exp(p.scale * qk - lse[stat]);
        ds = pr * (dov - delta[stat]);
      }
      p_chunk[tid] = pr;
      ds_chunk[tid] = ds;
      barrier();
      uint chunk = min(uint(WG), t_end - c0);
      for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
        uint d = tid + i * WG;
        if (d >= p.D) break;
        float a = 0.0, c = 0.0;
        for (uint tt = 0u; tt < chunk; ++tt) {
          uint at = q0 + (c0 + tt) * query_stride + d;
          a += ds_chunk[tt] * q[at];
          c += p_chunk[tt] * do_[at];
        }
        dk_acc[i] += a;
        dv_acc[i] += c;
      }
      barrier();  // the chunks are rewritten next
    }
  }

  for (uint i = 0u; i < DIMS_PER_THREAD; ++i) {
    uint d = tid + i * WG;
    if (d < p.D) {
      dk[row * p.D + d] = p.scale * dk_acc[i];
      dv[row * p.D + d] = dv_acc[i];
    }
  }
}
#endif  // BACKWARD_DKDV
