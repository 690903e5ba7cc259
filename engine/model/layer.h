#pragma once
// One decoder layer, recorded: its forward, which the inference forward (model/forward.h) and the
// training step (model/training.h) both call, and its backward beside it. Both read the layer's
// description (model/layer_spec.h). What differs between inference and training is data, not code:
//   - where the activations live (plan_layer_acts: one set reused at once in inference; in training
//     what the backward reads kept per layer, or only each layer's input when recomputing);
//   - where k and v go: into the KV cache at step[kPastSlot], attention reading the whole cache
//     (LayerActs::k_cache defined), or attention over the batch's own k and v, keeping the softmax
//     statistics for the backward (training);
//   - whether the adapter has gradients and dropout (LayerRun).
//
// One layer, HF semantics (Qwen2/Qwen3/Llama/Mistral), x the f32 residual stream:
//   h1 = norm(x_in)·w_in;  q, k, v = h1·Wqᵀ + bq, ...;  (Qwen3: q, k = norm(q)·w_q, norm(k)·w_k per head)
//   q, k = RoPE(q, k) at positions
//   attn = causal GQA attention of q over k, v (or over the cache);  x_mid = x_in + attn·Woᵀ
//   h2 = norm(x_mid)·w_post;  x_out = x_mid + (silu(h2·Wgᵀ) · (h2·Wuᵀ))·Wdᵀ
// each projection with the adapter's term where it adapts it: + scale·(x̃·Aᵀ)·Bᵀ. Phi-3's fused qkv_proj and
// gate_up_proj are computed as their parts (q, k, v; gate, up), each with its rows of the weight and of the
// adapter's B (model/layer_spec.h); its longrope picks LayerRun::inv_freq (short or long factors).
// Gemma 3 (sandwich norms): x_mid = x_in + norm_ao(attn·Woᵀ), x_out = x_mid + norm_mo(down), the MLP
// (gelu_tanh(h2·Wgᵀ) · (h2·Wuᵀ))·Wdᵀ; its sliding layers take LayerRun::inv_freq_local.
//
// Sizes as in model/layer_acts.h: M = B·T tokens, C hidden, H / KV heads of D, I intermediate.
#include <cstdint>

#include "model/layer_acts.h"
#include "model/weights.h"
#include "ops/norms.h"
#include "vk/recorder.h"

namespace ls::model {

// Slots of the i32 `step` tensor an inference program's host writes before each run.
constexpr uint32_t kPastSlot = 0;     // tokens already in the KV cache (this chunk starts there)
constexpr uint32_t kLastRowSlot = 1;  // row of the chunk whose logits are wanted (last-row mode)
constexpr uint32_t kStepSlots = 2;

// Profiling groups: every dispatch of a program is timed under one of these labels (the adapter's own
// products under "lora", set by ops::lora_forward/backward).
inline constexpr const char* kGroupEmbedding = "embedding";
inline constexpr const char* kGroupNorms = "norms";
inline constexpr const char* kGroupAttention = "attention";
inline constexpr const char* kGroupMlp = "mlp";
inline constexpr const char* kGroupLoss = "loss";

// What all layers of a program share.
struct LayerRun {
  Tensor positions;                       // (M) i32 the position of each token, for RoPE
  Tensor inv_freq;                        // (D/2) f32 RoPE inverse frequencies
  Tensor inv_freq_local;                  // (D/2) f32 those of LayerSpec::local_rope layers (Gemma 3)
  Tensor step;                            // inference: [kStepSlots] i32 (step[kPastSlot]: the cache's fill)
  const LoraAdapter* adapter = nullptr;   // null: no adapter
  const LoraAdapter* grads = nullptr;     // training: LoRA gradients (accumulated), shaped like adapter
  float dropout = 0;                      // training: LoRA dropout on each adapted projection's input
  Tensor dropout_seed;                    // [2] i32, when dropout > 0
  float grad_unscale = 1;                 // training: undoes the loss scale the activation gradients carry
  bool recomputing = false;               // training: each layer's forward runs again before its backward
  bool rows_are_sequences = false;        // inference: row r is sequence r's next token (model::ForwardInputs)
  uint32_t key_bound = 0;                 // inference: the most keys a token sees, 0: the cache's (ForwardInputs)
};

// x = embed[ids] · spec.embedding_scale. x (M, C) f32; ids (M) i32.
void embed_tokens(vk::Recorder& rec, const ModelSpec& spec, const Tensor& x, const Tensor& embed, const Tensor& ids);
// y = norm(x)·w as `norm` says (rstd: (rows) f32, kept for the backward).
void norm_forward(vk::Recorder& rec, const RmsNorm& norm, const Tensor& y, const Tensor& rstd, const Tensor& x,
                  const Tensor& w);
// logits = c·tanh(logits / c) in place when spec.logit_softcap = c > 0 (Gemma 3); nothing otherwise.
void logit_softcap(vk::Recorder& rec, const ModelSpec& spec, const Tensor& logits);
// dx = the norm's gradient (frozen weight), or dx += it with accumulate (more: ops::rms_norm_backward's second
// gradient part and f16 copy). f32; dx aliases neither dy nor x.
void norm_backward(vk::Recorder& rec, const RmsNorm& norm, const Tensor& dx, const Tensor& dy, const Tensor& x,
                   const Tensor& w, const Tensor& rstd, bool accumulate = false, const ops::NormBackwardMore& more = {});

// Training: a layer's last residual add, x_out = base + b, left to the next layer's input norm, whose pass adds
// and norms in one (ops::rms_norm_forward_add): no add pass, and where the down product splits K, its slices added
// up there too (sums) instead of a reduce of their own.
struct ResidualCarry {
  Tensor base, b;          // x_mid and down's output (not read where sums is defined)
  ops::SplitSums sums;
  bool next_layer = false;  // the caller's: a next layer will read what this one leaves
  bool pending() const { return base.defined(); }
};

// Records layer `layer`'s forward from a.x_in: every tensor of `a` the forward makes, and a.x_out when
// defined. With `carry` (training, every layer called with the same one): a.x_in is computed from the carry the
// previous layer left, if pending, and where carry->next_layer is set this layer may leave its own a.x_out pending
// there instead of writing it (LORASTUDIO_ADD_INTO_NORM=0: never, for measurement).
void layer_forward(vk::Recorder& rec, const LayerSpec& spec, const LayerWeights& w, const LayerActs& a,
                   const LayerRun& run, uint32_t layer, ResidualCarry* carry = nullptr);
// Records its backward (training; `a` as the forward left it). dres: (M, C) f32, the residual stream's
// gradient: d x_out in, d x_in out (accumulated), the latter only with input_grad (the first layer's
// input comes from the frozen embedding: nothing needs its gradient). LoRA gradients accumulate into
// run.grads; d is scratch (plan_layer_grads).
void layer_backward(vk::Recorder& rec, const LayerSpec& spec, const LayerWeights& w, const LayerActs& a,
                    const LayerActs& d, const LayerRun& run, uint32_t layer, const Tensor& dres, bool input_grad);
// Whether layer_backward takes q's, k's and v's dx as one product where their weights share an allocation
// (LayerWeights::qkv) and no dropout applies: yes unless LORASTUDIO_QKV_FUSED=0 (measurement; session 36 on the H100:
// 0.5B B1 14.46 -> 14.03 ms, B8 and 7B unchanged within noise).
bool qkv_backward_fuses();

}  // namespace ls::model
