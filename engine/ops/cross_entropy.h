#pragma once
// Cross-entropy of next-token logits (row argmax: ops/argmax.h). logits are [..., V] (N = the product of the other
// dimensions), f32, f16 or bf16; targets hold N i32 token ids. A row is counted when 0 <= target < V;
// a negative target (-100, as torch's ignore_index) is ignored. A target >= V is a caller bug the host
// cannot see (targets live on the device): the kernels treat that row as ignored rather than read out
// of bounds.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// lse [N] f32 = log(sum_c exp(logits[n, c])); row_loss [N] f32 = lse - logits[n, target[n]] (0 for
// ignored rows); loss [2] f32 = {mean of row_loss over the counted rows (0 when none), count}.
// Two dispatches: one workgroup per row, then a single-workgroup reduction (the same order every run).
void cross_entropy_forward(vk::Recorder& rec, const Tensor& loss, const Tensor& row_loss, const Tensor& lse,
                           const Tensor& logits, const Tensor& targets);

// The two halves of cross_entropy_forward, for logits computed a chunk of rows at a time: per chunk,
// lse and row_loss of its rows; then, once over all N rows, loss = {mean over counted rows, count}
// (vocab = V decides which targets count). With row_loss all zeros the reduce gives {0, count}: the
// normaliser a chunked backward needs before any chunk's loss is known.
void cross_entropy_rows(vk::Recorder& rec, const Tensor& row_loss, const Tensor& lse, const Tensor& logits,
                        const Tensor& targets);
void cross_entropy_reduce(vk::Recorder& rec, const Tensor& loss, const Tensor& row_loss, const Tensor& targets,
                          uint32_t vocab);

// dlogits [N, V] = dloss_scale * (softmax(logits) - onehot(target)) / count for counted rows, 0 for
// ignored rows (and everywhere when count = 0). count is read on the device from loss[1]. dlogits is
// f32 or the dtype of logits, and may alias logits (same dtype) to save the second [N, V] buffer.
// softcap c > 0: `logits` are capped, l = c·tanh(z / c) (ops::softcap_forward in place of the raw z), and
// dlogits is the gradient of the raw z: the above times 1 - (l / c)² (no second buffer for z needed).
void cross_entropy_backward(vk::Recorder& rec, const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                            const Tensor& lse, const Tensor& loss, float dloss_scale = 1.0f, float softcap = 0.0f);

// CPU references (accumulate in double); F is float or double. logits [N, V] row-major; targets past
// [0, V) are ignored as in the kernels. loss has 2 elements {mean, count}.
namespace ref {
template <class F>
void cross_entropy_forward(std::span<F> loss, std::span<F> row_loss, std::span<F> lse, std::span<const F> logits,
                           std::span<const int32_t> targets, uint32_t vocab);
template <class F>
void cross_entropy_backward(std::span<F> dlogits, std::span<const F> logits, std::span<const int32_t> targets,
                            std::span<const F> lse, std::span<const F> loss, uint32_t vocab, double dloss_scale = 1.0,
                            double softcap = 0.0);
}  // namespace ref

}  // namespace ls::ops
