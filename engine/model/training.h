#pragma once
// One LoRA training step's forward and backward through the transformer, written out layer by layer
// (docs/design.md: no general autograd) by model/layer.h's layer_forward, the inference forward's own, and
// layer_backward: activations the backward needs are kept in tensors the recorded program owns
// (ActsPlan::training, or ActsPlan::recompute); gradients flow through the frozen weights to the inputs
// of each adapted projection, and only the LoRA matrices get gradients (ACCUMULATED into `grads`, so
// several micro-batches can add up before the optimiser; zero them first for a plain gradient).
// Loss: mean cross-entropy over the counted targets (target < 0 is ignored, -100 by convention).
// Activations and the backward kernels are f32; on tensor cores the products round their operands to f16
// and accumulate in f32 (docs/design.md "Precision"). The vocabulary projection and cross-entropy go a chunk
// of rows at a time (logit_rows_per_chunk).
#include <cstdint>
#include <span>

#include "model/layer.h"
#include "model/lora.h"
#include "model/weights.h"
#include "vk/recorder.h"

namespace ls::model {

struct TrainBatch {
  uint32_t B = 1, T = 1;
  Tensor ids;        // [B*T] i32
  Tensor positions;  // [B*T] i32 (position of each token in its row)
  Tensor targets;    // [B*T] i32, the next token to predict, or < 0 to ignore
  Tensor dropout_seed;  // [2] i32 (read as u32), rewritten before each replay; needed when dropout > 0
  // Optional, all three or none (fill_loss_rows writes them): the vocabulary projection and the
  // cross-entropy, by far the costliest part of a small model's step (V = 151,936 for Qwen), then run
  // over K rows instead of all B*T: the rows that have a target, padded with rows that have none. Chat
  // data trains on the assistant's turns only, often a quarter of the rows or less.
  Tensor loss_rows;     // [K] i32: rows (b*T + t) with a target, ascending, then padding rows without one
  Tensor loss_targets;  // [K] i32: the targets of those rows (< 0 for the padding)
  Tensor loss_slots;    // [B*T] i32: a row's index in loss_rows when it has a target, else -1
};

struct StepOptions {
  // Multiplies the gradients (1 / micro-batches when accumulating; the loss itself is unscaled).
  float loss_scale = 1.0f;
  // LoRA dropout probability on every adapted projection's input (0 for evaluation). The masks come
  // from batch.dropout_seed and the projection (stream layer · 7 + target), so a replay with the same
  // seed is bit-identical and a new seed draws new masks.
  float dropout = 0.0f;
  // Activation recomputation (--grad-checkpoint): keep only each layer's input and run the layer's
  // forward again before its backward. Same results, bit for bit; activations of one layer instead of
  // all; about one more forward of the layers in time.
  bool recompute = false;
};

// Fills a batch's loss_rows, loss_targets and loss_slots (host copies) from its targets. Throws ls::Error
// when more rows have a target than loss_rows holds (K).
void fill_loss_rows(std::span<const int32_t> targets, std::span<int32_t> loss_rows, std::span<int32_t> loss_targets,
                    std::span<int32_t> loss_slots);

// Records forward + backward. loss: [2] f32 = {mean loss, counted targets}. grads: same layout as
// adapter (defined where the adapter is), f32, accumulated.
void record_train_step(vk::Recorder& rec, const Model& model, const LoraAdapter& adapter, const LoraAdapter& grads,
                       const TrainBatch& batch, const Tensor& loss, const StepOptions& options = {});

// Profiling groups: kGroupEmbedding, kGroupNorms, kGroupAttention, kGroupMlp, kGroupLoss (model/layer.h).

// The dtype of the step's logits (and of their gradient, in place): f16 where the lm_head's products round
// their operands to f16 anyway (model::products_in_f16 for a `head_weight` never quantized), so that the
// dx product reads them as they are and the loss kernels move half the bytes; else f32. (PyTorch's bf16
// models make bf16 logits; f16 keeps 8x finer steps.)
DType logits_dtype(bool coopmat2, bool coopmat, DType head_weight);

// Rows of logits computed at once by the step: ≤ 256 MiB of them (64 MiB on devices whose bindings are
// smaller), `logit_bytes` each, as few chunks as that allows sized about equally, a multiple of 16 rows, at
// most `rows`.
uint32_t logit_rows_per_chunk(uint32_t rows, uint32_t vocab, uint64_t max_binding, uint32_t logit_bytes = 4);

// The device bytes of the head's and the loss's buffers record_train_step allocates (its table, each tensor
// rounded as the allocator rounds it) for a [B, T] batch whose loss runs over K rows (0: all B·T).
uint64_t loss_buffers_bytes(uint32_t B, uint32_t T, uint32_t K, uint32_t hidden, uint32_t vocab, uint64_t max_binding,
                            DType logits = DType::f32);

// The adapter's matrices as views of one allocation (LoraAdapter::storage): layer by layer, target by target, A
// then B, each at a multiple of 64 floats, the padding zero; the values copied when copy_values, else zero.
// Two adapters made from the same one have the same layout. An adapter larger than one binding of the device
// (lavapipe: 128 MiB) keeps a tensor a matrix, storage undefined.
LoraAdapter flat_like(vk::Device& device, const LoraAdapter& adapter, bool copy_values);

// Zero-initialised gradient tensors shaped like the adapter's (flat_like).
LoraAdapter zero_grads_like(vk::Device& device, const LoraAdapter& adapter);

}  // namespace ls::model
