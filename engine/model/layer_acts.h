#pragma once
// The activations of a decoder layer (model/layer.h records the layer over them) and where they live:
// one plan table (layer_acts.cpp) says each tensor's shape and dtype, whether the backward reads it, and
// which tensors share memory in inference and in the backward's gradients.
//
// Sizes: B rows of a batch (1 in inference), T tokens a row, M = B·T, C hidden, H / KV query / key-value
// heads, D head dim, I intermediate, S KV-cache capacity, r LoRA rank. `act` is the dtype of the
// activations that enter matmuls: f32, or f16 (tensor cores) in inference; training is f32 but for the
// F16Operands below.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "model/layer_spec.h"
#include "model/lora.h"
#include "tensor/tensor.h"

namespace ls::model {

// The activations of one layer, in the order the forward makes them. The backward's gradients are the
// same struct: d.h1 is the gradient of h1, and so on.
struct LayerActs {
  Tensor x_in;              // (M, C) f32         the residual stream entering the layer
  Tensor rstd1;             // (M) f32            1/rms of x_in
  Tensor h1;                // (M, C) act         input_layernorm(x_in)
  Tensor q_proj, k_proj;    // (B, T, H|KV, D) act  q_proj(h1), k_proj(h1) before their norms (qk_norm only)
  Tensor rstd_q, rstd_k;    // (M·H), (M·KV) f32  1/rms of each head of q_proj, k_proj (qk_norm only)
  Tensor q;                 // (B, T, H, D) act   after RoPE (and the q norm)
  Tensor k, v;              // (B, T, KV, D) act  k after RoPE (and the k norm)
  Tensor k_cache, v_cache;  // (1, S, KV, D) act  inference: this layer's KV cache; undefined in training
  Tensor attn;              // (B, T, H, D) act   attention's output
  Tensor lse;               // (B, H, T) f32      its softmax log-sum-exp, for the backward (training)
  Tensor o;                 // (M, C) f32         o_proj(attn)
  Tensor rstd_o;            // (M) f32            1/rms of o (sandwich norms only)
  Tensor out_normed;        // (M, C) f32         norm(o), then norm(down), before each residual add (sandwich
                            //                    norms only)
  Tensor x_mid;             // (M, C) f32         x_in + o
  Tensor rstd2;             // (M) f32            1/rms of x_mid
  Tensor h2;                // (M, C) act         post_attention_layernorm(x_mid)
  Tensor gate, up;          // (M, I) act         gate_proj(h2), up_proj(h2)
  Tensor gated;             // (M, I) act         act(gate)·up
  Tensor down;              // (M, C) f32         down_proj(gated)
  Tensor rstd_down;         // (M) f32            1/rms of down (sandwich norms only)
  Tensor x_out;             // (M, C) f32         x_mid + down; undefined: not written (a recompute)
  std::array<Tensor, kLoraTargetCount> lora_t;  // (M, r) f32  x̃·Aᵀ of each adapted projection
};

// Where a program's layer activations live.
enum class ActsPlan : uint8_t {
  // One set for all layers, each tensor reused once read: h2 in h1, rstd2 in rstd1, gated in gate, down
  // in o, and the residual stream updated in place (x_in = x_mid = x_out). No lse.
  inference,
  // What the backward reads, one set per layer, each layer's output the next one's input; the rest
  // (o, down; with sandwich norms, whose backward reads those two, out_normed) one set for all layers.
  training,
  // Training that keeps only each layer's input; the rest is one set for all layers, refilled by running
  // a layer's forward again just before its backward (same inputs, same dropout masks, same results).
  recompute,
};

// Activations kept in f16 where the products that read them round them to f16 anyway, which halves what
// training keeps and saves the conversion before each product (ops/matmul.cpp cm2_a_as_f16). Training only;
// the default keeps every such tensor in its table dtype (f32).
struct F16Operands {
  // gated when down_proj has no adapter, the gradients of gate and up when neither has one (an adapter's own
  // products read them in f32).
  bool gated = false;
  bool mlp_grads = false;
  // gate and up (the products' outputs, which the activation reads forward and backward) and d gated (the down
  // product's dx, which the activation's backward reads) in f16 too, when both of the above hold: the
  // activation kernels then read and write f16 only. Halves the MLP's elementwise traffic and its kept
  // activations (0.5B B8: silu_mul and its backward 5.1 ms a step in f32, session 13).
  bool gate_up = false;
  // h1 and h2, the norms' outputs: the projections' products read them in f16, and the adapter's rank-r
  // products read them as f16 too (shaders/matmul_skinny.comp, f32 arithmetic).
  bool normed = false;
  // q, k, v (after RoPE and the q/k norms) and the attention's output: the flash kernels round q, k and v to
  // f16 for their products and the o product rounds the output. Only where the backward reads f16 itself
  // (ops/attention_flash.h attention_flash_backward_f16_fit: cooperative-matrix-2, no window).
  bool attention = false;
};
// Whether the projections' products round their operands to f16: on VK_NV_cooperative_matrix2 the
// workgroup-scope GEMM (ops/matmul.cpp cm2_fits) takes them when their weights are quantized (dequantized
// to f16) or f16, as bf16 weights are on tensor cores (model/weights.cpp stored_dtype). `weight`: the
// projections' dtype in the file or as stored, either. The one rule of model/training.cpp (the step),
// train/memory_plan.cpp and train/step_scratch.cpp (its plan).
bool products_in_f16(bool coopmat2, bool coopmat, bool quantized, DType weight);
// Which ones, for products that round their operands to f16 (products_in_f16) and an adapter on `adapted`
// in every layer (`attention` only if every layer's attention fits). Measurement and tests:
// LORASTUDIO_F16_ACTS=0 keeps normed and attention in f32, LORASTUDIO_F16_GATE_UP=0 gate_up;
// LORASTUDIO_F16_ACTS=1 turns every one on whatever the products (f32 products read f16 operands too).
F16Operands f16_operands(bool products_in_f16, const ModelSpec& spec, std::span<const LoraTarget> adapted);

// One LayerActs per layer (shared tensors appear in several), x_in to x_out and lora_t included; lora_t
// where `adapter` (may be null) adapts a projection. k_cache and v_cache are the caller's to set. The last
// layer's x_out is the stream leaving the layers.
std::vector<LayerActs> plan_layer_acts(vk::Device& device, const ModelSpec& spec, const LoraAdapter* adapter,
                                       uint32_t B, uint32_t T, DType act, ActsPlan plan, F16Operands f16 = {});

// The gradients layer_backward writes, f32 (d gate and d up f16 with f16.mlp_grads), one set for all layers; d.h2 shares d.h1 and d.x_in shares
// d.x_mid (each holds a norm's part of the residual's gradient until it is added in).
LayerActs plan_layer_grads(vk::Device& device, const LayerSpec& spec, uint32_t B, uint32_t T, F16Operands f16 = {});

// The device bytes plan_layer_acts allocates, read off the same plan table without a device (each tensor
// rounded as the allocator rounds it: vk::Memory::footprint), for memory plans (train/memory_plan.h).
// `adapted`: the projections the adapter adapts in every layer, with its rank.
struct ActsBytes {
  uint64_t per_layer = 0;  // what each layer keeps of its own (the plan's Keep::input, and Keep::backward
                           // in training), lora_t included
  uint64_t layers = 0;     // how many layers keep per_layer
  uint64_t shared = 0;     // one set for all layers, and the stream leaving the last layer
  uint64_t total() const { return per_layer * layers + shared; }
};
ActsBytes layer_acts_bytes(const ModelSpec& spec, std::span<const LoraTarget> adapted, uint32_t rank, uint32_t B,
                           uint32_t T, DType act, ActsPlan plan, F16Operands f16 = {});
// The device bytes plan_layer_grads allocates.
uint64_t layer_grads_bytes(const LayerSpec& spec, uint32_t B, uint32_t T, F16Operands f16 = {});

}  // namespace ls::model
