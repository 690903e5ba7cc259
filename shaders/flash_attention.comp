#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention for training (ops/attention.h: attention_forward and attention_backward), f32
// throughout. Tiles of queries and keys are staged in shared memory and the scores of one tile pair live
// only there: the [T, S] score matrix never exists in global memory. Query t sees keys j <= past + t
// (past = S - T); query head h reads kv head g = h / (H / KV). Head dims up to DMAX (64 or 128, a
// kernel each), D a multiple of 4 (rows move as vec4); shorter rows are zero-padded in shared memory.
//   FORWARD        workgroup (query block, h, b): online softmax over key blocks (running max m and
//                  sum l per row; the output accumulator is rescaled when m grows); o and lse. Also over
//                  KV caches whose fill level `past` is read from the device (prefill of engine/infer).
//   BACKWARD_DQ    workgroup (query block, h, b): delta = do·o per row (also written for the next
//                  kernel), p = exp(scale q·k - lse), ds = p (do·v - delta), dq = scale Σ_j ds k_j.
//   BACKWARD_DKDV  workgroup (key block, h, b): dk = scale Σ_t ds q_t, dv = Σ_t p do_t over the queries
//                  that see the block, for one query head: written per head ([B, H, S, D], summed over
//                  each kv group by attention_group_sum) or, when H = KV, straight into dk and dv.
// Threads form a 16-wide grid: in a score tile thread (ty, tx) owns rows ty + TY·i and columns
// tx + 16·c; in an output tile the same rows and the vec4 columns tx + 16·e. Every sum runs in a fixed
// order (deterministic, no atomics); each key or query block is summed on its own before it is added
// to the running total, and dot products keep four partial sums, as in shaders/attention.comp.
// Every tile fits lavapipe's 32 KiB of shared memory.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
// The fill level read from memory is broadcast from the first lane: uniform as far as the compiler can
// see, so the key loop (barriers, tensor-core products) is not treated as divergent.
#extension GL_KHR_shader_subgroup_ballot : require

#if defined(FORWARD)
#if DMAX == 64
#define TY 16
#define BQ 32
#define BK 32
#else
#define TY 16
#define BQ 16
#define BK 32
#endif
#elif defined(BACKWARD_DQ)
#if DMAX == 64
#define TY 16
#define BQ 32
#define BK 32
#else
#define TY 16
#define BQ 16
#define BK 16
#endif
#elif defined(BACKWARD_DKDV)
#if DMAX == 64
#define TY 16
#define BK 16
#define BQ 32
#else
#define TY 8
#define BK 8
#define BQ 16
#endif
#endif

layout(local_size_x = 16 * TY) in;
const uint TX = 16u, THREADS = 16u * TY;
const uint DV = DMAX / 4;          // vec4 per staged row
const uint LD = DV + 1u;           // staged row stride in vec4: the odd stride spreads rows over banks
const uint DPT = DV / TX;          // vec4 output columns per thread
const float kMasked = -3.0e38;     // below any real score

layout(push_constant) uniform Params {
  uint B, T, S, H, KV, D;
  float scale;
  uint per_head;        // BACKWARD_DKDV: dk and dv are [B, H, S, D] partials (1) or [B, S, KV, D] (0)
  uint past_on_device;  // FORWARD: past = past_buf[0], k and v are KV caches of capacity S (else past = S - T)
  uint splits;          // 1 here (shaders/flash_attention_coopmat.comp splits its backward)
} p;

// result = a · b over the DV vec4 of two staged rows (or COUNT of them). `precise` (no fma contraction):
// do·v here and delta = do·o round alike, so they cancel exactly where o = v.
#define DOT_ROWS(result, A, B, COUNT)                                  \
  {                                                                    \
    precise vec4 part_ = vec4(0.0);                                    \
    for (uint c_ = 0u; c_ < (COUNT); ++c_) part_ += (A) * (B);         \
    result = (part_.x + part_.y) + (part_.z + part_.w);                \
  }

// ROWS rows of a [B, L, heads, D] tensor (vec4 view SRC) from row `first` of head `head` into the
// staged tile DST; rows past `limit` and columns past D are zero.
#define STAGE_ROWS(DST, SRC, ROWS, first, limit, L, heads, head)                                  \
  for (uint e_ = gl_LocalInvocationID.x; e_ < (ROWS) * DV; e_ += THREADS) {                       \
    const uint r_ = e_ / DV, c_ = e_ % DV, row_ = (first) + r_;                                   \
    DST[r_ * LD + c_] = (row_ < (limit) && c_ < p.D / 4u)                                         \
                            ? SRC[((gl_WorkGroupID.z * (L) + row_) * (heads) + (head)) * (p.D / 4u) + c_] \
                            : vec4(0.0);                                                          \
  }

#if defined(FORWARD)
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) writeonly buffer O { vec4 o4[]; };
layout(binding = 4) writeonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Past { int past_buf[]; };

const uint RPT = BQ / TY, KPT = BK / TX, LS = BK + 1u;
shared vec4 q_s[BQ * LD];
shared vec4 kv_s[BK * LD];  // the block's keys, then its values
shared float s_s[BQ * LS];  // scores, then probabilities
shared float m_s[BQ], l_s[BQ], alpha_s[BQ];

void main() {
  const uint tid = gl_LocalInvocationID.x, tx = tid % TX, ty = tid / TX;
  const uint q0 = gl_WorkGroupID.x * BQ, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint g = h / (p.H / p.KV), D4 = p.D / 4u;
  const uint past = p.past_on_device != 0u ? subgroupBroadcastFirst(uint(max(past_buf[0], 0))) : p.S - p.T;
  STAGE_ROWS(q_s, q4, BQ, q0, p.T, p.T, p.H, h);
  if (tid < BQ) {
    m_s[tid] = kMasked;
    l_s[tid] = 0.0;
  }
  vec4 acc[RPT][DPT];
  [[unroll]] for (uint i = 0u; i < RPT; ++i)
    [[unroll]] for (uint e = 0u; e < DPT; ++e) acc[i][e] = vec4(0.0);

  const uint n_keys = min(past + min(q0 + BQ, p.T), p.S);  // keys seen by the block's last row
  for (uint k0 = 0u; k0 < n_keys; k0 += BK) {
    barrier();  // the previous block is done with kv_s and s_s
    STAGE_ROWS(kv_s, k4, BK, k0, n_keys, p.S, p.KV, g);  // rows past n_keys (unwritten cache rows): 0
    barrier();
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint c = 0u; c < KPT; ++c) {
        const uint r = ty + TY * i, j = tx + TX * c;
        float s;
        DOT_ROWS(s, q_s[r * LD + c_], kv_s[j * LD + c_], DV);
        s_s[r * LS + j] = k0 + j <= past + q0 + r && k0 + j < p.S ? s * p.scale : kMasked;
      }
    barrier();
    STAGE_ROWS(kv_s, v4, BK, k0, n_keys, p.S, p.KV, g);  // the keys are no longer read
    // Online softmax, 8 threads a row (consecutive lanes of one subgroup): key 0 is seen by every row,
    // so m is finite from the first block on and masked scores give exp(...) = 0.
    if (tid < BQ * 8u) {
      const uint r = tid / 8u, part = tid % 8u;
      float mx = kMasked;
      [[unroll]] for (uint u = 0u; u < BK / 8u; ++u) mx = max(mx, s_s[r * LS + part + 8u * u]);
      mx = max(mx, subgroupShuffleXor(mx, 1u));
      mx = max(mx, subgroupShuffleXor(mx, 2u));
      mx = max(mx, subgroupShuffleXor(mx, 4u));
      const float m_old = m_s[r], m_new = max(m_old, mx);
      float sum = 0.0;
      [[unroll]] for (uint u = 0u; u < BK / 8u; ++u) {
        const uint at = r * LS + part + 8u * u;
        const float e = exp(s_s[at] - m_new);
        s_s[at] = e;
        sum += e;
      }
      sum += subgroupShuffleXor(sum, 1u);
      sum += subgroupShuffleXor(sum, 2u);
      sum += subgroupShuffleXor(sum, 4u);
      if (part == 0u) {
        const float alpha = exp(m_old - m_new);
        alpha_s[r] = alpha;
        l_s[r] = l_s[r] * alpha + sum;
        m_s[r] = m_new;
      }
    }
    barrier();
    vec4 blk[RPT][DPT];
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint e = 0u; e < DPT; ++e) blk[i][e] = vec4(0.0);
    for (uint j = 0u; j < BK; ++j) {
      vec4 vj[DPT];
      [[unroll]] for (uint e = 0u; e < DPT; ++e) vj[e] = kv_s[j * LD + tx + TX * e];
      [[unroll]] for (uint i = 0u; i < RPT; ++i) {
        const float pj = s_s[(ty + TY * i) * LS + j];
        [[unroll]] for (uint e = 0u; e < DPT; ++e) blk[i][e] += pj * vj[e];
      }
    }
    [[unroll]] for (uint i = 0u; i < RPT; ++i) {
      const float alpha = alpha_s[ty + TY * i];
      [[unroll]] for (uint e = 0u; e < DPT; ++e) acc[i][e] = acc[i][e] * alpha + blk[i][e];
    }
  }
  barrier();
  if (tid < BQ && q0 + tid < p.T) lse[(b * p.H + h) * p.T + q0 + tid] = m_s[tid] + log(l_s[tid]);
  [[unroll]] for (uint i = 0u; i < RPT; ++i) {
    const uint r = ty + TY * i, t = q0 + r;
    if (t >= p.T) continue;
    const float l = l_s[r];
    [[unroll]] for (uint e = 0u; e < DPT; ++e)
      if (tx + TX * e < D4) o4[((b * p.T + t) * p.H + h) * D4 + tx + TX * e] = acc[i][e] / l;
  }
}

#elif defined(BACKWARD_DQ)
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) readonly buffer O { vec4 o4[]; };
layout(binding = 4) readonly buffer DO { vec4 do4[]; };
layout(binding = 5) readonly buffer Lse { float lse[]; };
layout(binding = 6) writeonly buffer DQ { vec4 dq4[]; };
layout(binding = 7) writeonly buffer Delta { float delta[]; };

const uint RPT = BQ / TY, KPT = BK / TX, LS = BK + 1u;
shared vec4 q_s[BQ * LD], do_s[BQ * LD];
shared vec4 kv_s[BK * LD];  // the block's values, then its keys
shared float ds_s[BQ * LS];
shared float lse_s[BQ], delta_s[BQ];

void main() {
  const uint tid = gl_LocalInvocationID.x, tx = tid % TX, ty = tid / TX;
  const uint q0 = gl_WorkGroupID.x * BQ, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint g = h / (p.H / p.KV), past = p.S - p.T, D4 = p.D / 4u;
  STAGE_ROWS(q_s, q4, BQ, q0, p.T, p.T, p.H, h);
  STAGE_ROWS(do_s, do4, BQ, q0, p.T, p.T, p.H, h);
  barrier();
  if (tid < BQ) {
    const uint t = q0 + tid, stat = (b * p.H + h) * p.T + t;
    float dl = 0.0;
    if (t < p.T) {
      const uint row = ((b * p.T + t) * p.H + h) * D4;
      DOT_ROWS(dl, do_s[tid * LD + c_], o4[row + c_], D4);
      delta[stat] = dl;
    }
    delta_s[tid] = dl;
    lse_s[tid] = t < p.T ? lse[stat] : 0.0;
  }
  vec4 acc[RPT][DPT];
  [[unroll]] for (uint i = 0u; i < RPT; ++i)
    [[unroll]] for (uint e = 0u; e < DPT; ++e) acc[i][e] = vec4(0.0);

  const uint n_keys = min(past + min(q0 + BQ, p.T), p.S);
  for (uint k0 = 0u; k0 < n_keys; k0 += BK) {
    barrier();  // the previous block is done with kv_s and ds_s
    STAGE_ROWS(kv_s, v4, BK, k0, p.S, p.S, p.KV, g);
    barrier();
    float dp[RPT][KPT];
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint c = 0u; c < KPT; ++c) DOT_ROWS(dp[i][c], do_s[(ty + TY * i) * LD + c_], kv_s[(tx + TX * c) * LD + c_], DV);
    barrier();
    STAGE_ROWS(kv_s, k4, BK, k0, p.S, p.S, p.KV, g);
    barrier();
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint c = 0u; c < KPT; ++c) {
        const uint r = ty + TY * i, j = tx + TX * c;
        float s;
        DOT_ROWS(s, q_s[r * LD + c_], kv_s[j * LD + c_], DV);
        const bool seen = k0 + j <= past + q0 + r && k0 + j < p.S;
        const float pr = seen ? exp(s * p.scale - lse_s[r]) : 0.0;
        ds_s[r * LS + j] = pr * (dp[i][c] - delta_s[r]);
      }
    barrier();
    vec4 blk[RPT][DPT];
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint e = 0u; e < DPT; ++e) blk[i][e] = vec4(0.0);
    for (uint j = 0u; j < BK; ++j) {
      vec4 kj[DPT];
      [[unroll]] for (uint e = 0u; e < DPT; ++e) kj[e] = kv_s[j * LD + tx + TX * e];
      [[unroll]] for (uint i = 0u; i < RPT; ++i) {
        const float dsj = ds_s[(ty + TY * i) * LS + j];
        [[unroll]] for (uint e = 0u; e < DPT; ++e) blk[i][e] += dsj * kj[e];
      }
    }
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint e = 0u; e < DPT; ++e) acc[i][e] += blk[i][e];
  }
  [[unroll]] for (uint i = 0u; i < RPT; ++i) {
    const uint t = q0 + ty + TY * i;
    if (t >= p.T) continue;
    [[unroll]] for (uint e = 0u; e < DPT; ++e)
      if (tx + TX * e < D4) dq4[((b * p.T + t) * p.H + h) * D4 + tx + TX * e] = p.scale * acc[i][e];
  }
}

#elif defined(BACKWARD_DKDV)
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) readonly buffer DO { vec4 do4[]; };
layout(binding = 4) readonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Delta { float delta[]; };
layout(binding = 6) writeonly buffer DKOut { vec4 dk4[]; };
layout(binding = 7) writeonly buffer DVOut { vec4 dv4[]; };

const uint RPT = BK / TY, QPT = BQ / TX, LQ = BQ + 1u;
shared vec4 k_s[BK * LD], v_s[BK * LD];
shared vec4 q_s[BQ * LD], do_s[BQ * LD];
shared float p_s[BK * LQ], ds_s[BK * LQ];
shared float lse_s[BQ], delta_s[BQ];

void main() {
  const uint tid = gl_LocalInvocationID.x, tx = tid % TX, ty = tid / TX;
  const uint j0 = gl_WorkGroupID.x * BK, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint g = h / (p.H / p.KV), past = p.S - p.T, D4 = p.D / 4u;
  STAGE_ROWS(k_s, k4, BK, j0, p.S, p.S, p.KV, g);
  STAGE_ROWS(v_s, v4, BK, j0, p.S, p.S, p.KV, g);
  vec4 dk[RPT][DPT], dv[RPT][DPT];
  [[unroll]] for (uint i = 0u; i < RPT; ++i)
    [[unroll]] for (uint e = 0u; e < DPT; ++e) {
      dk[i][e] = vec4(0.0);
      dv[i][e] = vec4(0.0);
    }
  // The first query that sees key j0 is j0 - past.
  const uint t_start = (j0 > past ? (j0 - past) / BQ : 0u) * BQ;
  for (uint t0 = t_start; t0 < p.T; t0 += BQ) {
    barrier();  // the previous block is done with q_s, do_s, p_s and ds_s
    STAGE_ROWS(q_s, q4, BQ, t0, p.T, p.T, p.H, h);
    STAGE_ROWS(do_s, do4, BQ, t0, p.T, p.T, p.H, h);
    if (tid < BQ) {
      const uint t = t0 + tid, stat = (b * p.H + h) * p.T + t;
      lse_s[tid] = t < p.T ? lse[stat] : 0.0;
      delta_s[tid] = t < p.T ? delta[stat] : 0.0;
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint c = 0u; c < QPT; ++c) {
        const uint r = ty + TY * i, u = tx + TX * c, j = j0 + r, t = t0 + u;
        float s, dpv;
        DOT_ROWS(s, q_s[u * LD + c_], k_s[r * LD + c_], DV);
        DOT_ROWS(dpv, do_s[u * LD + c_], v_s[r * LD + c_], DV);
        const bool seen = t < p.T && j < p.S && j <= past + t;
        const float pr = seen ? exp(s * p.scale - lse_s[u]) : 0.0;
        p_s[r * LQ + u] = pr;
        ds_s[r * LQ + u] = pr * (dpv - delta_s[u]);
      }
    barrier();
    vec4 bk[RPT][DPT], bv[RPT][DPT];
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint e = 0u; e < DPT; ++e) {
        bk[i][e] = vec4(0.0);
        bv[i][e] = vec4(0.0);
      }
    for (uint u = 0u; u < BQ; ++u) {
      vec4 qu[DPT], du[DPT];
      [[unroll]] for (uint e = 0u; e < DPT; ++e) {
        qu[e] = q_s[u * LD + tx + TX * e];
        du[e] = do_s[u * LD + tx + TX * e];
      }
      [[unroll]] for (uint i = 0u; i < RPT; ++i) {
        const uint r = ty + TY * i;
        const float pr = p_s[r * LQ + u], dsr = ds_s[r * LQ + u];
        [[unroll]] for (uint e = 0u; e < DPT; ++e) {
          bv[i][e] += pr * du[e];
          bk[i][e] += dsr * qu[e];
        }
      }
    }
    [[unroll]] for (uint i = 0u; i < RPT; ++i)
      [[unroll]] for (uint e = 0u; e < DPT; ++e) {
        dk[i][e] += bk[i][e];
        dv[i][e] += bv[i][e];
      }
  }
  [[unroll]] for (uint i = 0u; i < RPT; ++i) {
    const uint j = j0 + ty + TY * i;
    if (j >= p.S) continue;
    const uint row = p.per_head != 0u ? ((b * p.H + h) * p.S + j) * D4 : ((b * p.S + j) * p.KV + g) * D4;
    [[unroll]] for (uint e = 0u; e < DPT; ++e)
      if (tx + TX * e < D4) {
        dk4[row + tx + TX * e] = p.scale * dk[i][e];
        dv4[row + tx + TX * e] = dv[i][e];
      }
  }
}
#endif
