#pragma once
// The transformer's forward pass for inference, recorded once per chunk size and replayed at every
// position (DESIGN.md "Record once, replay many"): token ids, positions and the KV-cache fill level
// live in small host-visible tensors the host writes before each run.
//
// One layer (Qwen2/Llama/Mistral, HF semantics), x the f32 residual stream [T, C]:
//   h = RMSNorm(x) · w_in;  q, k, v = h·Wqᵀ + bq, ...;  q, k = RoPE(q, k) at positions
//   cache[past .. past + T) = k, v;  a = causal GQA attention of q over cache[0 .. past + t]
//   x += a·Woᵀ;  h = RMSNorm(x) · w_post;  x += (silu(h·Wgᵀ) * (h·Wuᵀ))·Wdᵀ
// then logits = RMSNorm(x) · w_final · lm_headᵀ, in f32, for every row or only for the row
// step[kLastRowSlot] (the last real token of a padded chunk).
// Activations entering matmuls are `act` (f32, or f16 for tensor cores); the residual stream, norms'
// statistics, attention's softmax and the logits are f32.
#include <vector>

#include "model/lora.h"
#include "model/weights.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::model {

// Slots of the i32 `step` tensor the host writes before each run.
constexpr uint32_t kPastSlot = 0;     // tokens already in the KV cache (this chunk starts there)
constexpr uint32_t kLastRowSlot = 1;  // row of the chunk whose logits are wanted (last-row mode)
constexpr uint32_t kStepSlots = 2;

struct KvCache {
  std::vector<Tensor> k, v;  // per layer [1, capacity, KV, D] of the activation dtype
  uint32_t capacity = 0;
  static KvCache allocate(vk::Device& device, const ModelConfig& c, uint32_t capacity, DType act);
};

struct ForwardInputs {
  Tensor ids;        // [T] i32
  Tensor positions;  // [T] i32 (past + t)
  Tensor step;       // [kStepSlots] i32
};

// Records the forward of T = ids.numel() tokens. logits: [T, V] f32 (all rows) or [1, V] f32 (the row
// step[kLastRowSlot]). adapter may be null. Scratch tensors are allocated here and kept by the program.
void record_forward(vk::Recorder& rec, const Model& model, const LoraAdapter* adapter, const KvCache& cache,
                    const ForwardInputs& in, const Tensor& logits, DType act);

}  // namespace ls::model
