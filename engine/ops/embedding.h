#pragma once
// Token embedding. table: [V, C] f32, f16 or bf16; ids: [N] or any shape of N tokens, i32;
// y: ids' shape + [C], f32, f16 or bf16 (converted from the table's type, rounding to nearest even).
//   y[t, :] = table[ids[t], :]   (a token whose id is outside [0, V) gets a row of zeros)
// A table may be larger than one storage-buffer binding can reach (Qwen2.5's 151936 x 896 bf16 table is
// 272 MB; lavapipe binds at most 128 MiB): the ops split it into row chunks that fit
// report().max_storage_range, with aligned starts, and dispatch once per chunk. max_chunk_bytes
// (0: no limit of its own) lowers the chunk size further; tests use it to exercise the chunking on
// every device. A chunk holds at least the few rows that keep chunk starts aligned.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

void embedding_forward(vk::Recorder& rec, const Tensor& y, const Tensor& table, const Tensor& ids,
                       uint64_t max_chunk_bytes = 0);
// The same gather of rows, for rows that are not tokens: dst [.., C] (rows' shape + [C]) = the rows of
// src [R, C] that rows (i32) picks, dst[i, :] = src[rows[i], :], a row of zeros where rows[i] is outside
// [0, R) (model/training.cpp compacts the loss's rows and spreads their gradient back with it). Dtypes
// and conversions as embedding_forward's.
void gather_rows(vk::Recorder& rec, const Tensor& dst, const Tensor& src, const Tensor& rows);
// dtable[v, :] += sum over tokens t with ids[t] == v of dy[t, :], ACCUMULATING into dtable ([V, C] f32;
// zero it first for a plain gradient). dy: ids' shape + [C], f32, f16 or bf16. Ids outside [0, V) are
// ignored. Deterministic (no float atomics), O(N^2 C): meant for the modest token counts of training
// steps whose embedding is trained at all.
void embedding_backward(vk::Recorder& rec, const Tensor& dtable, const Tensor& dy, const Tensor& ids,
                        uint64_t max_chunk_bytes = 0);

namespace ref {
// table: [V, C], y: [N, C] row-major, V = table.size() / cols.
void embedding_forward(std::span<float> y, std::span<const float> table, std::span<const int32_t> ids, uint32_t cols);
void embedding_forward(std::span<double> y, std::span<const double> table, std::span<const int32_t> ids, uint32_t cols);
// Accumulates like the op, summing each id's dy rows in token order (the kernel's order).
void embedding_backward(std::span<float> dtable, std::span<const float> dy, std::span<const int32_t> ids,
                        uint32_t cols);
void embedding_backward(std::span<double> dtable, std::span<const double> dy, std::span<const int32_t> ids,
                        uint32_t cols);
}  // namespace ref

}  // namespace ls::ops
