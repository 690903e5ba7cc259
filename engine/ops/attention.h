#pragma once
// Causal self-attention with grouped-query heads (Qwen2.5: H = 14 query heads, KV = 2 kv heads, D = 64).
//   q [B, T, H, D], k and v [B, S, KV, D], o [B, T, H, D], lse [B, H, T] f32.
// S = past + T: the keys start with a KV-cache prefix of `past` positions (training: past = 0, S = T).
// Query head h reads kv head g = h / (H / KV). Query t (0-based within this call) sees keys j <= past + t:
//   s_j = scale * q[b,t,h,:] . k[b,j,g,:]
//   lse[b,h,t] = log sum_j exp(s_j),   o[b,t,h,:] = sum_j exp(s_j - lse) * v[b,j,g,:]
// scale is usually 1 / sqrt(D). D <= 256, any S. The forward and backward take flash kernels where they fit
// (ops/attention_flash.h: on tensor cores f16 products with f32 sums, elsewhere f32 throughout).
// A sliding window (`window` > 0: Mistral, Phi-3, Qwen2's use_sliding_window) limits query t to the keys
// past + t - window < j <= past + t, as transformers' sliding-window mask does; where it can matter
// (window < S) the row kernels (shaders/attention.comp, attention_backward.comp) compute it, the flash,
// products and split paths being for unwindowed attention.
#include <span>

#include "ops/split_sums.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

struct AttentionDims {
  uint32_t B = 1, T = 1, S = 1, H = 1, KV = 1, D = 1;
  uint32_t window = 0;  // 0: every earlier key; else the last `window` positions (the query's own included)
  uint32_t past() const { return S - T; }
  uint32_t first_key(uint32_t t) const { return window && past() + t + 1 > window ? past() + t + 1 - window : 0; }
};

constexpr uint32_t kAttentionMaxHeadDim = 256;

// q, k, v, o: f32 or f16 (all the same); lse: f32, saved for the backward. past = S - T from the shapes.
void attention_forward(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                       const Tensor& v, float scale, uint32_t window = 0);

// Attention over KV caches whose fill level lives on the device, for programs recorded once and
// replayed at every position: k_cache, v_cache [B, S_max, KV, D] already hold this call's T keys and
// values at positions past .. past + T - 1 (see ops/copy_rows.h), and past = past[0] (i32, host-written
// before each run). Query t sees keys 0 .. past + t (clamped to S_max). No lse output.
// per_sequence (batched generation, T <= 4): each batch row b is a sequence of its own with past = past[b].
// key_bound > 0: no query sees more than key_bound keys whenever the program runs (the caller's promise; a key past it
// would be left out), so that decoding's split kernels launch workgroups for those alone, not for all S_max.
void attention_cached_forward(vk::Recorder& rec, const Tensor& o, const Tensor& q, const Tensor& k_cache,
                              const Tensor& v_cache, const Tensor& past, float scale, uint32_t window = 0,
                              bool per_sequence = false, uint32_t key_bound = 0);

// q, k, v, o: f32 or f16 (all the same; f16 is read as it is by the cooperative-matrix-2 kernels and
// widened to f32 copies for the others); do, lse and the gradients f32.
// With delta[b,h,t] = do[b,t,h,:] . o[b,t,h,:], p = exp(s_j - lse), ds = p * (do . v_j - delta):
//   dq[b,t,h,:] = scale * sum_j ds * k[b,j,g,:]
//   dk[b,j,g,:] = scale * sum_{h in g, t} ds * q[b,t,h,:],   dv[b,j,g,:] = sum_{h in g, t} p * do[b,t,h,:]
// dq, dk, dv are overwritten. Two dispatches (dq and delta, then dk and dv); delta lives in a scratch tensor the
// recorded program keeps alive. Deterministic (no atomics).
// With do_sums defined (attention_backward_takes_split_do must hold), do is neither read nor expected written: the
// split product that makes it (o's dx, ops::matmul_backward_x_unreduced) left its partial sums, which the backward's
// first pass adds up as the product's reduce would, so the reduce needs no stage of its own.
void attention_backward(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& do_,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& lse,
                        float scale, uint32_t window = 0, const SplitSums& do_sums = {});
// Whether attention_backward with these operands takes do as split sums: its kernels are the cooperative-matrix-2
// flash ones, whose row statistic (delta) is a pass of its own that reads do (ops/attention_flash.h flash_delta).
bool attention_backward_takes_split_do(vk::Device& device, const Tensor& q, const Tensor& k, const Tensor& v,
                                       uint32_t window = 0);

// CPU reference, double accumulation. Same layouts as above, flat row-major spans; dims.window as above.
namespace ref {
void attention_forward(std::span<float> o, std::span<float> lse, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, const AttentionDims& dims, double scale);
void attention_forward(std::span<double> o, std::span<double> lse, std::span<const double> q,
                       std::span<const double> k, std::span<const double> v, const AttentionDims& dims, double scale);
void attention_backward(std::span<float> dq, std::span<float> dk, std::span<float> dv, std::span<const float> do_,
                        std::span<const float> q, std::span<const float> k, std::span<const float> v,
                        std::span<const float> o, std::span<const float> lse, const AttentionDims& dims,
                        double scale);
void attention_backward(std::span<double> dq, std::span<double> dk, std::span<double> dv,
                        std::span<const double> do_, std::span<const double> q, std::span<const double> k,
                        std::span<const double> v, std::span<const double> o, std::span<const double> lse,
                        const AttentionDims& dims, double scale);
}  // namespace ref

}  // namespace ls::ops
