#pragma once
// The transformer's forward pass for inference, recorded once per chunk size and replayed at every
// position (docs/design.md "Record once, replay many"): token ids, positions and the KV-cache fill level
// live in small host-visible tensors the host writes before each run.
//
// The layers are model/layer.h's layer_forward over one set of activations reused at once
// (ActsPlan::inference), each layer's k and v written into its KV cache at step[kPastSlot] and attention
// reading the cache up to each token; then logits = norm(x) · w_final · lm_headᵀ, in f32, for every row
// or only for the row step[kLastRowSlot] (the last real token of a padded chunk); Gemma 3 caps them
// (c·tanh(logits / c), ModelSpec::logit_softcap).
// Activations entering matmuls are `act` (f32, or f16 for tensor cores); the residual stream, norms'
// statistics, attention's softmax and the logits are f32.
#include <vector>

#include "model/layer.h"
#include "model/lora.h"
#include "model/weights.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::model {

// The slots of the i32 `step` tensor the host writes before each run: kPastSlot, kLastRowSlot (model/layer.h).

struct KvCache {
  std::vector<Tensor> k, v;  // per layer [sequences, capacity, KV, D] of the activation dtype
  uint32_t capacity = 0;     // tokens a sequence
  uint32_t sequences = 1;    // > 1: batched generation, one cache a sequence (ForwardInputs::rows_are_sequences)
  static KvCache allocate(vk::Device& device, const ModelConfig& c, uint32_t capacity, DType act,
                          uint32_t sequences = 1);
  // The shape of one layer's k (and v): [sequences, capacity, KV, D].
  static Shape layer_shape(const ModelConfig& c, uint32_t capacity, uint32_t sequences = 1);
  // The device bytes allocate() takes (every tensor rounded as the allocator rounds it), for memory plans.
  static uint64_t bytes(const ModelConfig& c, uint32_t capacity, DType act, uint32_t sequences = 1);
};

struct ForwardInputs {
  Tensor ids;        // [T] i32
  Tensor positions;  // [T] i32 (past + t)
  Tensor step;       // [kStepSlots] i32
  // longrope: RoPE with the long factors (ModelWeights::inv_freq_long), for a forward that reaches past
  // original_max_position_embeddings (rope_uses_long_factors); a program is recorded for each choice.
  bool long_rope = false;
  // Batched generation: token r is the next token of sequence r (the cache's sequences, one token each), at
  // position positions[r], which is also that sequence's fill level; step is not read. Logits [T, V].
  bool rows_are_sequences = false;
  // > 0: no token of this forward sees more than key_bound keys of the cache (the program is replayed only at
  // positions below it), so that decoding's attention launches workgroups for those alone and not for the cache's
  // whole capacity (infer::Generator's bursts); 0: the capacity.
  uint32_t key_bound = 0;
};

// Records the forward of T = ids.numel() tokens. logits: [T, V] f32 (all rows) or [1, V] f32 (the row
// step[kLastRowSlot]). adapter may be null. Scratch tensors are allocated here and kept by the program.
void record_forward(vk::Recorder& rec, const Model& model, const LoraAdapter* adapter, const KvCache& cache,
                    const ForwardInputs& in, const Tensor& logits, DType act);

}  // namespace ls::model
