#include "ops/attention_products.h"

#include <algorithm>

#include "ops/attention_group_sum.h"
#include "ops/common.h"
#include "ops/matmul.h"

namespace ls::ops::detail {

namespace {

struct RowParams {  // = Params in shaders/attention_rows.comp
  uint32_t rows, T, H, D;
};

vk::Groups groups_for(uint64_t rows) {
  const uint32_t x = uint32_t(std::min<uint64_t>(rows, 65535));
  return {x, uint32_t(std::min<uint64_t>((rows + x - 1) / x, 65535)), 1};
}

// The [B·H·T, T] f32 matrix in scratch slot `slot`.
Tensor score_matrix(vk::Recorder& rec, const AttentionDims& d, uint32_t slot) {
  const uint64_t rows = uint64_t(d.B) * d.H * d.T;
  return Tensor::view(rec.device(), rec.scratch(rows * d.T * 4, vk::Recorder::kScratchAttention + slot),
                      {uint32_t(rows), d.T}, DType::f32);
}

// X·Yᵀ per (b, h) for X [B, T, H, D] and Y [B, T, KV, D] (head h reads kv head h / G): scores [B, H, T, T].
StridedProduct rows_by_keys(const AttentionDims& d, float alpha) {
  return {.M = d.T, .N = d.T, .K = d.D, .batch = d.B * d.H, .z_div = d.H, .a_sm = d.H * d.D, .a_sk = 1,
          .b_sn = d.KV * d.D, .b_sk = 1, .c_sm = d.T, .a_sz = d.D, .b_sz = d.D, .c_sz = d.T * d.T,
          .a_sz2 = d.T * d.H * d.D, .b_sz2 = d.T * d.KV * d.D, .c_sz2 = d.H * d.T * d.T, .b_group = d.H / d.KV,
          .alpha = alpha, .beta = 0};
}

// P·Y per (b, h) for P [B, H, T, T] and Y [B, T, KV, D]: out [B, T, H, D].
StridedProduct scores_by_keys(const AttentionDims& d, float alpha) {
  return {.M = d.T, .N = d.D, .K = d.T, .batch = d.B * d.H, .z_div = d.H, .a_sm = d.T, .a_sk = 1, .b_sn = 1,
          .b_sk = d.KV * d.D, .c_sm = d.H * d.D, .a_sz = d.T * d.T, .b_sz = d.D, .c_sz = d.D,
          .a_sz2 = d.H * d.T * d.T, .b_sz2 = d.T * d.KV * d.D, .c_sz2 = d.T * d.H * d.D, .b_group = d.H / d.KV,
          .alpha = alpha, .beta = 0};
}

// Pᵀ·X per (b, h) for P [B, H, T, T] and X [B, T, H, D]: out [B, H, T, D] (per query head).
StridedProduct transposed_scores_by_rows(const AttentionDims& d, float alpha) {
  return {.M = d.T, .N = d.D, .K = d.T, .batch = d.B * d.H, .z_div = d.H, .a_sm = 1, .a_sk = d.T, .b_sn = 1,
          .b_sk = d.H * d.D, .c_sm = d.D, .a_sz = d.T * d.T, .b_sz = d.D, .c_sz = d.T * d.D,
          .a_sz2 = d.H * d.T * d.T, .b_sz2 = d.T * d.H * d.D, .c_sz2 = d.H * d.T * d.D, .b_group = 1,
          .alpha = alpha, .beta = 0};
}

void group_sum(vk::Recorder& rec, const Tensor& y, const Tensor& per_head, const AttentionDims& d) {
  const uint64_t total = uint64_t(d.B) * d.T * d.KV * d.D;
  rec.dispatch(vk::Kernel::attention_group_sum, {in(per_head), out(y)},
               GroupSumParams{uint32_t(total), d.T, d.KV, d.D, d.H / d.KV, 1}, groups_for((total + 255) / 256),
               {.local_x = 256});
}

}  // namespace

bool attention_products_fit(vk::Device& device, const AttentionDims& d, DType dtype) {
  const uint64_t bytes = uint64_t(d.B) * d.H * d.T * d.T * 4;
  return device.coopmat() && dtype == DType::f32 && d.S == d.T && d.T >= 16 && d.D % 8 == 0 &&
         d.B * d.H <= 65535 && bytes <= std::min<uint64_t>(device.report().max_storage_range, uint64_t(1) << 30);
}

void attention_forward_products(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                                const Tensor& v, const AttentionDims& d, float scale) {
  const Tensor p = score_matrix(rec, d, 0);
  matmul_strided(rec, p, q, k, rows_by_keys(d, scale));  // scaled scores
  const uint64_t rows = uint64_t(d.B) * d.H * d.T;
  rec.dispatch(vk::Kernel::attention_probs_forward, {inout(p), out(lse), in(q), in(q), in(q)},
               RowParams{uint32_t(rows), d.T, d.H, d.D}, groups_for(rows), {.local_x = 256});
  matmul_strided(rec, o, p, v, scores_by_keys(d, 1.0f));
}

void attention_backward_products(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                 const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                 const Tensor& lse, const AttentionDims& d, float scale) {
  const uint64_t rows = uint64_t(d.B) * d.H * d.T;
  const RowParams params{uint32_t(rows), d.T, d.H, d.D};
  // p = exp(scale·q·kᵀ - lse), recomputed.
  const Tensor p = score_matrix(rec, d, 0);
  matmul_strided(rec, p, q, k, rows_by_keys(d, scale));
  rec.dispatch(vk::Kernel::attention_probs_from_lse, {inout(p), in(lse), in(q), in(q), in(q)}, params, groups_for(rows),
               {.local_x = 256});
  // dp = do·vᵀ, then ds = p·(dp - delta) in place.
  const Tensor ds = score_matrix(rec, d, 1);
  matmul_strided(rec, ds, do_, v, rows_by_keys(d, 1.0f));
  rec.dispatch(vk::Kernel::attention_dscores, {inout(ds), in(lse), in(p), in(do_), in(o)}, params, groups_for(rows),
               {.local_x = 256});
  // dq = scale·ds·k;  dk = scale·Σ_{h in group} dsᵀ·q;  dv = Σ_{h in group} pᵀ·do.
  matmul_strided(rec, dq, ds, k, scores_by_keys(d, scale));
  const uint64_t per_head_bytes = rows * d.D * 4;
  const Tensor per_head = Tensor::view(rec.device(), rec.scratch(per_head_bytes, vk::Recorder::kScratchAttention + 2),
                                       {uint32_t(rows), d.D}, DType::f32);
  matmul_strided(rec, per_head, ds, q, transposed_scores_by_rows(d, scale));
  group_sum(rec, dk, per_head, d);
  matmul_strided(rec, per_head, p, do_, transposed_scores_by_rows(d, 1.0f));
  group_sum(rec, dv, per_head, d);
}

}  // namespace ls::ops::detail
