#version 450
#extension GL_GOOGLE_include_directive : require
// Flash attention on tensor cores (GL_NV_cooperative_matrix, or GL_KHR_cooperative_matrix with COOPMAT_KHR:
// common/coopmat_api.glsl; subgroups of 32): the training attention of
// shaders/flash_attention.comp with its products as f16 × f16 → f32 16×16×16 matrix products, and the
// element-wise steps between them (masking, exp, the gradient of the softmax) in shared memory.
// q, k, v, o, do and the gradients are f32 in global memory, staged as f16 (as the products path rounds
// them). Head dims D a multiple of 16 up to DMAX (64 or 128, a kernel each).
//   FORWARD        workgroup: 64 queries (4 subgroups of 16 rows) of head h. Two passes over the key
//                  blocks: the first finds each row's lse, the second adds exp(s - lse)·v, so the output
//                  accumulators never need rescaling and stay in the tensor-core registers. Also over KV
//                  caches whose fill level `past` is read from the device, with f16 q, k, v, o (IO_F16).
//   BACKWARD_DQ    workgroup: 32 queries (2 subgroups); delta = do·o (written for the next kernel),
//                  p = exp(scale q·k - lse), ds = p (do·v - delta), dq = scale Σ ds k. With `splits` > 1 each
//                  workgroup sums its share of the key blocks into a partial dq ([splits·B, H, T, D],
//                  per_head), which attention_group_sum adds up: more workgroups where B·H·T/32 are too few
//                  to keep the GPU's schedulers busy (the loop's steps wait on shared memory and barriers).
//   BACKWARD_DKDV  workgroup: 32 keys (2 subgroups) and one query head; dv = Σ_t p do_t,
//                  dk = scale Σ_t ds q_t, per query head and split of the query blocks ([splits·B, H, S, D],
//                  summed over each kv group and the splits by attention_group_sum) or, when H = KV and
//                  there is one split, straight into dk and dv.
// Query t sees keys j <= past + t (past = S - T); query head h reads kv head g = h / (H / KV).
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
// The fill level read from memory is broadcast from the first lane: uniform as far as the compiler can
// see, so the key loop (barriers, tensor-core products) is not treated as divergent.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
#include "common/types.glsl"
#include "common/coopmat_api.glsl"

#define ACC CM_ACC

#if defined(FORWARD)
#define SUBGROUPS 4
#else
#define SUBGROUPS 2
#endif
layout(local_size_x = 32 * SUBGROUPS) in;
const uint THREADS = 32u * SUBGROUPS;
const uint ROWS = 16u * SUBGROUPS;  // rows of the workgroup's own tile (queries, or keys for DKDV)
const uint BLK = 32u;               // rows of the other operand per step (keys, or queries for DKDV)
const uint DV = DMAX / 4;           // vec4 per staged row
const uint DN = DMAX / 16;          // 16-column matrices across a row
const uint LDH = DMAX + 8u;         // staged row stride in halves: 16 bytes of padding against bank conflicts
const uint LSC = BLK;               // row stride of the f32 score scratch
const uint LP = BLK + 8u;           // row stride of the f16 probability tiles
const float kMasked = -3.0e38;

layout(push_constant) uniform Params {
  uint B, T, S, H, KV, D;
  float scale;
  uint per_head;
  uint past_on_device;  // FORWARD: past = past_buf[0], k and v are KV caches of capacity S (else past = S - T)
  uint splits;          // backward: workgroups z = b·splits + split, each over its share of the other operand
} p;

// N rows of a [B, L, heads, D] f32 tensor (vec4 view SRC), batch b, from row `first` of head `head` into the f16
// tile DST (row stride LDH); rows past `limit` and columns past D are zero; values clamped to the f16
// range, as the GEMM stages f32 operands.
#define STAGE_ROWS(DST, SRC, N, first, limit, L, heads, head)                                          \
  for (uint e_ = gl_LocalInvocationID.x; e_ < (N) * DV; e_ += THREADS) {                               \
    const uint r_ = e_ / DV, c_ = e_ % DV, row_ = (first) + r_;                                        \
    const vec4 x_ = (row_ < (limit) && c_ < p.D / 4u)                                                  \
                        ? clamp(vec4(SRC[((b * (L) + row_) * (heads) + (head)) * (p.D / 4u) + c_]), \
                                -65504.0, 65504.0)                                                     \
                        : vec4(0.0);                                                                   \
    const uint at_ = r_ * LDH + 4u * c_;                                                               \
    DST[at_] = float16_t(x_.x);                                                                        \
    DST[at_ + 1u] = float16_t(x_.y);                                                                   \
    DST[at_ + 2u] = float16_t(x_.z);                                                                   \
    DST[at_ + 3u] = float16_t(x_.w);                                                                   \
  }

// RES[0..1] = rows [r0, r0 + 16) of tile A times the BLK rows of tile B, transposed: a 16×32 block
// of A·Bᵀ over the DMAX columns (zero past D).
#define PRODUCT_ABT(RES, A, r0, B)                                                   \
  {                                                                                  \
    RES[0] = ACC(0.0);                                                               \
    RES[1] = ACC(0.0);                                                               \
    [[unroll]] for (uint kk_ = 0u; kk_ < DN; ++kk_) {                                \
      CM_A a_;                                                                       \
      CM_B b0_, b1_;                                                                 \
      cm_load(a_, A, (r0) * LDH + kk_ * 16u, LDH, CM_ROW);                           \
      cm_load(b0_, B, kk_ * 16u, LDH, CM_COL);                                       \
      cm_load(b1_, B, 16u * LDH + kk_ * 16u, LDH, CM_COL);                           \
      RES[0] = cm_mul_add(a_, b0_, RES[0]);                                          \
      RES[1] = cm_mul_add(a_, b1_, RES[1]);                                          \
    }                                                                                \
  }

// ACCS[n] += (16×32 f16 tile P at offset P0, row stride LP) · (the BLK rows of tile B), n < DN.
#define ACCUMULATE_PB(ACCS, P, P0, B)                                               \
  [[unroll]] for (uint kk_ = 0u; kk_ < 2u; ++kk_) {                                  \
    CM_A a_;                                                                         \
    cm_load(a_, P, (P0) + kk_ * 16u, LP, CM_ROW);                                    \
    [[unroll]] for (uint n_ = 0u; n_ < DN; ++n_) {                                   \
      CM_B b_;                                                                       \
      cm_load(b_, B, kk_ * 16u * LDH + n_ * 16u, LDH, CM_ROW);                       \
      ACCS[n_] = cm_mul_add(a_, b_, ACCS[n_]);                                       \
    }                                                                                \
  }

// The column a lane visits at step c of its 16 (two lanes a row, `half_` picking the half): rotated by the
// row `lr`, so that at each step the subgroup's 32 lanes read 32 different banks of the f32 scratch (row
// stride LSC = 32 floats). In plain order the 16 lanes of one half read one bank: 16-way conflicts on every
// score read. The sums over c do not depend on the order but for rounding.
#define ROTATED_COL(c) (half_ * 16u + (((c) + lr) & 15u))

void sync_subgroup() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// The subgroup's 16 rows of accumulators ACCS (times `factor`, converted by CONV) to a [B', L, heads, D]
// tensor DST at batch out_b, element by element through the subgroup's scratch: rows from `first`, up to
// `limit`.
#define STORE_ROWS(ACCS, factor, SCRATCH, S0, DST, first, limit, L, heads, head, CONV)               \
  [[unroll]] for (uint n_ = 0u; n_ < DN; ++n_) {                                                    \
    if (n_ * 16u >= p.D) break;                                                                     \
    cm_store(ACCS[n_], SCRATCH, S0, LSC, CM_ROW);                                                   \
    sync_subgroup();                                                                                \
    for (uint e_ = gl_SubgroupInvocationID; e_ < 256u; e_ += 32u) {                                 \
      const uint r_ = e_ / 16u, c_ = e_ % 16u, row_ = (first) + r_;                                 \
      if (row_ < (limit))                                                                           \
        DST[((out_b * (L) + row_) * (heads) + (head)) * p.D + n_ * 16u + c_] =                      \
            CONV((factor) * SCRATCH[(S0) + r_ * LSC + c_]);                                         \
    }                                                                                               \
    sync_subgroup();                                                                                \
  }

#if defined(FORWARD)
// q, k, v and o in f32, or in f16 (IO_F16: inference on tensor cores).
#if defined(IO_F16)
layout(binding = 0) readonly buffer Q { f16vec4 q4[]; };
layout(binding = 1) readonly buffer K { f16vec4 k4[]; };
layout(binding = 2) readonly buffer V { f16vec4 v4[]; };
layout(binding = 3) writeonly buffer O { float16_t o[]; };
#define TO_O(x) float16_t(x)
#else
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) writeonly buffer O { float o[]; };
#define TO_O(x) (x)
#endif
layout(binding = 4) writeonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Past { int past_buf[]; };

shared float16_t q_s[ROWS * LDH];
shared float16_t kv_s[BLK * LDH];       // the block's keys, then its values
shared float sc_s[SUBGROUPS * 16 * LSC];  // each subgroup's 16×32 scores
shared float16_t p_s[SUBGROUPS * 16 * LP];  // and probabilities

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint q0 = gl_WorkGroupID.x * ROWS, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z, out_b = b;
  const uint g = h / (p.H / p.KV);
  const uint past = p.past_on_device != 0u ? subgroupBroadcastFirst(uint(max(past_buf[0], 0))) : p.S - p.T;
  const uint s0 = sg * 16u * LSC, p0 = sg * 16u * LP;
  // Two lanes a row: lane `lane` reads columns half·16 .. half·16 + 15 of row `lr` of the scratch.
  const uint lr = lane / 2u, half_ = lane % 2u, t = q0 + sg * 16u + lr;
  STAGE_ROWS(q_s, q4, ROWS, q0, p.T, p.T, p.H, h);
  const uint n_keys = min(past + min(q0 + ROWS, p.T), p.S);

  // Pass 1: each row's max and sum of exponentials, online, per half row; then the halves combined.
  float m = kMasked, l = 0.0;
  for (uint k0 = 0u; k0 < n_keys; k0 += BLK) {
    barrier();
    STAGE_ROWS(kv_s, k4, BLK, k0, n_keys, p.S, p.KV, g);
    barrier();
    ACC s[2];
    PRODUCT_ABT(s, q_s, sg * 16u, kv_s);
    cm_store(s[0], sc_s, s0, LSC, CM_ROW);
    cm_store(s[1], sc_s, s0 + 16u, LSC, CM_ROW);
    sync_subgroup();
    // Each score read once into registers, in the lane's rotated column order (ROTATED_COL).
    float sv[16];
    float mx = kMasked;
    [[unroll]] for (uint c = 0u; c < 16u; ++c) {
      const uint col = ROTATED_COL(c), j = k0 + col;
      sv[c] = j <= past + t && j < p.S ? p.scale * sc_s[s0 + lr * LSC + col] : kMasked;
      mx = max(mx, sv[c]);
    }
    if (mx > kMasked) {
      const float m_new = max(m, mx);
      float sum = 0.0;
      [[unroll]] for (uint c = 0u; c < 16u; ++c)
        if (sv[c] > kMasked) sum += exp(sv[c] - m_new);
      l = l * exp(m - m_new) + sum;
      m = m_new;
    }
    sync_subgroup();
  }
  const float m_other = subgroupShuffleXor(m, 1u), l_other = subgroupShuffleXor(l, 1u);
  const float m_row = max(m, m_other);
  const float row_lse = m_row + log(l * exp(m - m_row) + l_other * exp(m_other - m_row));
  if (half_ == 0u && t < p.T) lse[(b * p.H + h) * p.T + t] = row_lse;

  // Pass 2: o = Σ_j exp(s_j - lse) v_j.
  ACC acc[DN];
  [[unroll]] for (uint n = 0u; n < DN; ++n) acc[n] = ACC(0.0);
  for (uint k0 = 0u; k0 < n_keys; k0 += BLK) {
    barrier();
    STAGE_ROWS(kv_s, k4, BLK, k0, n_keys, p.S, p.KV, g);
    barrier();
    ACC s[2];
    PRODUCT_ABT(s, q_s, sg * 16u, kv_s);
    cm_store(s[0], sc_s, s0, LSC, CM_ROW);
    cm_store(s[1], sc_s, s0 + 16u, LSC, CM_ROW);
    sync_subgroup();
    [[unroll]] for (uint c = 0u; c < 16u; ++c) {
      const uint col = ROTATED_COL(c), j = k0 + col;
      const float pr = j <= past + t && j < p.S ? exp(p.scale * sc_s[s0 + lr * LSC + col] - row_lse) : 0.0;
      p_s[p0 + lr * LP + col] = float16_t(pr);
    }
    barrier();  // every subgroup is done with the keys
    STAGE_ROWS(kv_s, v4, BLK, k0, n_keys, p.S, p.KV, g);
    barrier();
    ACCUMULATE_PB(acc, p_s, p0, kv_s);
  }
  barrier();
  STORE_ROWS(acc, 1.0, sc_s, s0, o, q0 + sg * 16u, p.T, p.T, p.H, h, TO_O);
}

#elif defined(BACKWARD_DQ)
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) readonly buffer O { vec4 o4[]; };
layout(binding = 4) readonly buffer DO { vec4 do4[]; };
layout(binding = 5) readonly buffer Lse { float lse[]; };
layout(binding = 6) writeonly buffer DQ { float dq[]; };
layout(binding = 7) writeonly buffer Delta { float delta[]; };

shared float16_t q_s[ROWS * LDH], do_s[ROWS * LDH];
shared float16_t k_s[BLK * LDH], v_s[BLK * LDH];
shared float sc_s[SUBGROUPS * 16 * LSC], dp_s[SUBGROUPS * 16 * LSC];
shared float16_t ds_s[SUBGROUPS * 16 * LP];

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint q0 = gl_WorkGroupID.x * ROWS, h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits, out_b = split * p.B + b;
  const uint g = h / (p.H / p.KV), past = p.S - p.T, D4 = p.D / 4u;
  const uint s0 = sg * 16u * LSC, p0 = sg * 16u * LP;
  const uint lr = lane / 2u, half_ = lane % 2u, t = q0 + sg * 16u + lr;
  STAGE_ROWS(q_s, q4, ROWS, q0, p.T, p.T, p.H, h);
  STAGE_ROWS(do_s, do4, ROWS, q0, p.T, p.T, p.H, h);
  // delta = do·o in f32 from global memory, half a row per lane.
  float dl = 0.0, row_lse = 0.0;
  if (t < p.T) {
    const uint row = ((b * p.T + t) * p.H + h) * D4;
    vec4 part = vec4(0.0);
    for (uint c = half_; c < D4; c += 2u) part += do4[row + c] * o4[row + c];
    dl = (part.x + part.y) + (part.z + part.w);
    row_lse = lse[(b * p.H + h) * p.T + t];
  }
  dl += subgroupShuffleXor(dl, 1u);
  if (half_ == 0u && t < p.T && split == 0u) delta[(b * p.H + h) * p.T + t] = dl;

  ACC acc[DN];
  [[unroll]] for (uint n = 0u; n < DN; ++n) acc[n] = ACC(0.0);
  // This split's share of the key blocks the tile sees.
  const uint n_keys = min(past + min(q0 + ROWS, p.T), p.S), blocks = (n_keys + BLK - 1u) / BLK;
  const uint k_end = min((split + 1u) * blocks / p.splits * BLK, n_keys);
  for (uint k0 = split * blocks / p.splits * BLK; k0 < k_end; k0 += BLK) {
    barrier();
    STAGE_ROWS(k_s, k4, BLK, k0, p.S, p.S, p.KV, g);
    STAGE_ROWS(v_s, v4, BLK, k0, p.S, p.S, p.KV, g);
    barrier();
    ACC s[2], dp[2];
    PRODUCT_ABT(s, q_s, sg * 16u, k_s);
    PRODUCT_ABT(dp, do_s, sg * 16u, v_s);
    cm_store(s[0], sc_s, s0, LSC, CM_ROW);
    cm_store(s[1], sc_s, s0 + 16u, LSC, CM_ROW);
    cm_store(dp[0], dp_s, s0, LSC, CM_ROW);
    cm_store(dp[1], dp_s, s0 + 16u, LSC, CM_ROW);
    sync_subgroup();
    [[unroll]] for (uint c = 0u; c < 16u; ++c) {
      const uint col = ROTATED_COL(c), j = k0 + col;
      const float pr = j <= past + t && j < p.S ? exp(p.scale * sc_s[s0 + lr * LSC + col] - row_lse) : 0.0;
      ds_s[p0 + lr * LP + col] = float16_t(pr * (dp_s[s0 + lr * LSC + col] - dl));
    }
    sync_subgroup();
    ACCUMULATE_PB(acc, ds_s, p0, k_s);
  }
  if (p.per_head != 0u) {  // split partials, [splits·B, H, T, D], summed by attention_group_sum
    STORE_ROWS(acc, p.scale, sc_s, s0, dq, h * p.T + q0 + sg * 16u, h * p.T + p.T, p.H * p.T, 1u, 0u, );
  } else {
    STORE_ROWS(acc, p.scale, sc_s, s0, dq, q0 + sg * 16u, p.T, p.T, p.H, h, );
  }
}

#elif defined(BACKWARD_DKDV)
layout(binding = 0) readonly buffer Q { vec4 q4[]; };
layout(binding = 1) readonly buffer K { vec4 k4[]; };
layout(binding = 2) readonly buffer V { vec4 v4[]; };
layout(binding = 3) readonly buffer DO { vec4 do4[]; };
layout(binding = 4) readonly buffer Lse { float lse[]; };
layout(binding = 5) readonly buffer Delta { float delta[]; };
layout(binding = 6) writeonly buffer DKOut { float dk[]; };
layout(binding = 7) writeonly buffer DVOut { float dv[]; };

shared float16_t k_s[ROWS * LDH], v_s[ROWS * LDH];
shared float16_t q_s[BLK * LDH], do_s[BLK * LDH];
shared float sc_s[SUBGROUPS * 16 * LSC], dp_s[SUBGROUPS * 16 * LSC];
shared float16_t pt_s[SUBGROUPS * 16 * LP], dst_s[SUBGROUPS * 16 * LP];
shared float lse_s[BLK], delta_s[BLK];

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, tid = gl_LocalInvocationID.x;
  const uint j0 = gl_WorkGroupID.x * ROWS, h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.splits, split = gl_WorkGroupID.z % p.splits, out_b = split * p.B + b;
  const uint g = h / (p.H / p.KV), past = p.S - p.T;
  const uint s0 = sg * 16u * LSC, p0 = sg * 16u * LP;
  // Two lanes a key row of the scratch: lane reads query columns half·16 .. half·16 + 15 of row lr.
  const uint lr = lane / 2u, half_ = lane % 2u, j = j0 + sg * 16u + lr;
  STAGE_ROWS(k_s, k4, ROWS, j0, p.S, p.S, p.KV, g);
  STAGE_ROWS(v_s, v4, ROWS, j0, p.S, p.S, p.KV, g);
  ACC dk_acc[DN], dv_acc[DN];
  [[unroll]] for (uint n = 0u; n < DN; ++n) {
    dk_acc[n] = ACC(0.0);
    dv_acc[n] = ACC(0.0);
  }
  const uint t_start = (j0 > past ? (j0 - past) / BLK : 0u) * BLK;  // the first query that sees key j0
  const uint blocks = (p.T - min(t_start, p.T) + BLK - 1u) / BLK;  // this split's share of them
  const uint t_end = min(t_start + (split + 1u) * blocks / p.splits * BLK, p.T);
  for (uint t0 = t_start + split * blocks / p.splits * BLK; t0 < t_end; t0 += BLK) {
    barrier();
    STAGE_ROWS(q_s, q4, BLK, t0, p.T, p.T, p.H, h);
    STAGE_ROWS(do_s, do4, BLK, t0, p.T, p.T, p.H, h);
    if (tid < BLK) {
      const uint t = t0 + tid, stat = (b * p.H + h) * p.T + t;
      lse_s[tid] = t < p.T ? lse[stat] : 0.0;
      delta_s[tid] = t < p.T ? delta[stat] : 0.0;
    }
    barrier();
    ACC s[2], dp[2];
    PRODUCT_ABT(s, k_s, sg * 16u, q_s);   // scores transposed: keys × queries
    PRODUCT_ABT(dp, v_s, sg * 16u, do_s);
    cm_store(s[0], sc_s, s0, LSC, CM_ROW);
    cm_store(s[1], sc_s, s0 + 16u, LSC, CM_ROW);
    cm_store(dp[0], dp_s, s0, LSC, CM_ROW);
    cm_store(dp[1], dp_s, s0 + 16u, LSC, CM_ROW);
    sync_subgroup();
    [[unroll]] for (uint c = 0u; c < 16u; ++c) {
      const uint col = ROTATED_COL(c), t = t0 + col;
      const bool seen = t < p.T && j < p.S && j <= past + t;
      const float pr = seen ? exp(p.scale * sc_s[s0 + lr * LSC + col] - lse_s[col]) : 0.0;
      pt_s[p0 + lr * LP + col] = float16_t(pr);
      dst_s[p0 + lr * LP + col] = float16_t(pr * (dp_s[s0 + lr * LSC + col] - delta_s[col]));
    }
    sync_subgroup();
    ACCUMULATE_PB(dv_acc, pt_s, p0, do_s);
    ACCUMULATE_PB(dk_acc, dst_s, p0, q_s);
  }
  barrier();
  // Per query head [splits·B, H, S, D] (rows b·H·S + h·S + j: L = H·S "rows" of one head each), or [B, S, KV, D].
  if (p.per_head != 0u) {
    STORE_ROWS(dk_acc, p.scale, sc_s, s0, dk, h * p.S + j0 + sg * 16u, h * p.S + p.S, p.H * p.S, 1u, 0u, );
    STORE_ROWS(dv_acc, 1.0, sc_s, s0, dv, h * p.S + j0 + sg * 16u, h * p.S + p.S, p.H * p.S, 1u, 0u, );
  } else {
    STORE_ROWS(dk_acc, p.scale, sc_s, s0, dk, j0 + sg * 16u, p.S, p.S, p.KV, g, );
    STORE_ROWS(dv_acc, 1.0, sc_s, s0, dv, j0 + sg * 16u, p.S, p.S, p.KV, g, );
  }
}
#endif
