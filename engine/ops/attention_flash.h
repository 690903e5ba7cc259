#pragma once
// Attention (ops/attention.h) through flash kernels: tiles of queries and keys in shared memory, no
// score matrix in global memory. On tensor cores (shaders/flash_attention_cm2.comp where the device offers
// VK_NV_cooperative_matrix2, else shaders/flash_attention_coopmat.comp) the products are f16 x f16 -> f32
// matrix products; elsewhere (shaders/flash_attention.comp) all math is f32 on the
// shader cores. ops/attention.cpp takes, in order: the tensor-core flash kernels, the products path
// (ops/attention_products.h), the f32 flash kernels, and the row kernels (shaders/attention.comp,
// attention_backward.comp: a workgroup per query or key row) for what none of them fits.
#include "ops/attention.h"

namespace ls::ops::detail {

// Whether the flash kernels take these shapes and dtype (f32; f16 only on tensor cores).
bool attention_flash_fit(vk::Device& device, const AttentionDims& d, DType dtype);
// Whether the backward reads f16 q, k, v and o itself: the cooperative-matrix-2 kernels, no window. Elsewhere
// ops/attention.cpp converts them to f32 first. The first without a device: what a device that offers
// VK_NV_cooperative_matrix2 would take (for the activation plan, model/layer_acts.h).
bool attention_flash_f16_kernels(const AttentionDims& d);
bool attention_flash_backward_f16_fit(vk::Device& device, const AttentionDims& d);
// Whether they run on tensor cores (head dim a multiple of 16, at least 16 queries).
bool attention_flash_coopmat_fit(vk::Device& device, const AttentionDims& d, DType dtype);
// With `past` (i32, past = past[0] read on the device), k and v are KV caches of capacity d.S, as in
// attention_cached_forward. Without `tensor_cores`, f32 inputs stay on the f32 kernels.
void attention_forward_flash(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                             const Tensor& v, const AttentionDims& d, float scale, const Tensor& past = Tensor(),
                             bool tensor_cores = true);
// Four dispatches (dq and delta; dk and dv per query head; their two sums over each kv group), two when
// H = KV; on tensor cores, with few query tiles, dq's and dk/dv's loops split over more workgroups
// (attention_flash_backward_splits) and dq's partial sums are added by a fifth. delta, dq's partials and
// the per-head gradients live in the recording's attention scratch (sizes below, for the memory plan).
// With do_sums defined (flash_backward_reads_delta_pass), the delta pass reads them in place of do.
void attention_backward_flash(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const Tensor& lse, const AttentionDims& d, float scale, const SplitSums& do_sums = {});
// Whether attention_backward_flash's kernels for these dims and q's dtype are the cooperative-matrix-2 ones, which
// read delta (and dO's f16 copy) from flash_delta's pass.
bool flash_backward_reads_delta_pass(vk::Device& device, const AttentionDims& d, DType dtype);
// Whether the tensor-core flash kernels are the cooperative-matrix-2 ones (shaders/flash_attention_cm2.comp),
// on a device that offers the extension: built, and not turned off by LORASTUDIO_FLASH_CM2=0.
bool flash_cm2_enabled(bool device_coopmat2);
// How many ways the tensor-core backward splits its loops (1: not split); LORASTUDIO_FLASH_SPLITS forces it.
uint32_t attention_flash_backward_splits(const AttentionDims& d, bool cm2);
// How many ways the forward splits each query block's keys (only on the cooperative-matrix-2 kernels,
// `cm2_kernels`, with few query blocks: the backward's rule; LORASTUDIO_FLASH_FORWARD_SPLITS forces it), the
// bytes of its partial outputs, in slot kScratchAttention + 1, and of their rows' statistics (8 bytes a row), in
// slot + 2: what the op asks for and train/step_scratch.cpp plans.
uint32_t attention_flash_forward_splits(const AttentionDims& d, bool cm2_kernels);
uint64_t flash_forward_split_bytes(const AttentionDims& d, uint32_t splits);
uint64_t flash_forward_stat_bytes(const AttentionDims& d, uint32_t splits);
// The split forward's partials added up (shaders/flash_combine.comp): part [splits·B·H·T, D] unnormalized outputs
// and ml [splits·B·H·T, 2] each row's (max, sum of exponentials), f32, into o [B, T, H, D] (f32 or f16) and
// lse [B, H, T].
void flash_combine(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& part, const Tensor& ml,
                   const AttentionDims& d, uint32_t splits);
// delta [B, H, T] = rowsum(do ∘ o) (shaders/flash_delta.comp): do f32, o f32 or f16, both [B, T, H, D]; with do16
// defined (f16, do's shape), also do rounded to f16 there. With do_sums defined, do is not read (nor written by
// anyone): its split product's partial sums are, added up as that product's reduce would (the same bits).
void flash_delta(vk::Recorder& rec, const Tensor& delta, const Tensor& do_, const Tensor& o, const AttentionDims& d,
                 const Tensor& do16 = Tensor(), const SplitSums& do_sums = {});
// delta's floats at the start of slot kScratchAttention (B·H·T rounded up to 64, so dq's partials after it
// start aligned), and the bytes of each per-head gradient (slots kScratchAttention + 1 and + 2).
uint64_t flash_delta_floats(const AttentionDims& d);
// The bytes of dO's f16 copy after delta and dq's partials in kScratchAttention (cooperative-matrix-2 backward).
uint64_t flash_do16_bytes(const AttentionDims& d, bool cm2_backward);
uint64_t flash_per_head_bytes(const AttentionDims& d, uint32_t splits);

// The row kernels.
void attention_forward_rows(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                            const Tensor& v, const AttentionDims& d, float scale);
void attention_backward_rows(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& do_,
                             const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& lse,
                             const AttentionDims& d, float scale);

}  // namespace ls::ops::detail
