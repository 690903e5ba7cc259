#pragma once
// Attention (ops/attention.h, training shapes: no KV-cache prefix) through batched matrix products, so
// that the tensor cores do the work: the [B, H, T, T] score matrices are materialised in f32 in the
// recording's scratch memory (reused by every layer), rows are normalised by one kernel, and the
// backward recomputes the scores from the saved lse (like flash attention) instead of keeping them.
// Used by attention_forward/backward when the device has tensor cores and the shapes fit.
#include "ops/attention.h"

namespace ls::ops::detail {

// Whether the products path takes these shapes (f32, S = T, score matrices within one binding).
bool attention_products_fit(vk::Device& device, const AttentionDims& d, DType dtype);
void attention_forward_products(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                                const Tensor& v, const AttentionDims& d, float scale);
void attention_backward_products(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                 const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                 const Tensor& lse, const AttentionDims& d, float scale);

}  // namespace ls::ops::detail
