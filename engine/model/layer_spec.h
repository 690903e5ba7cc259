#pragma once
// What a model family's decoder layer is, as data: its norms, its projections with their Hugging Face
// names, shapes and biases, its MLP activation, its attention (scale, window) and its RoPE. Everything
// that knows a layer reads this: the tensor table (model/architecture.h) and through it the weight
// upload, the demo model's writer and the UI's parameter count; the recorded layer (model/layer.h) for
// inference and for training. A new family is a row of kFamilies (layer_spec.cpp) plus the code for
// what is truly new in it: Qwen3 added the q/k norms (LayerSpec::qk_norm), Phi-3 the fused projections
// (ModuleSpec::parts) and longrope (config.h), Gemma 3 NormStyle::one_plus_weight, the sandwich norms
// (LayerSpec::sandwich_norms), MlpActivation::gelu_tanh, query_pre_attn_scalar (attention_scale), the
// sliding layers' own RoPE (LayerSpec::local_rope), the scaled embedding and the logit softcap (ModelSpec).
//
// Sizes: V vocab, C hidden, I intermediate, H / KV query / key-value heads, D head dim.
#include <cstdint>
#include <optional>
#include <vector>

#include "model/config.h"
#include "model/lora.h"

namespace ls::model {

// How an RMSNorm applies its weight to x̂ = x / rms(x).
enum class NormStyle : uint8_t {
  times_weight,     // y = x̂·w (Qwen2, Llama, Mistral, Qwen3, Phi-3)
  // y = x̂·(1 + w) (Gemma3RMSNorm, in f32). The weights' upload stores 1 + w in f32 (model/weights.cpp), the
  // very (1.0 + w.float()) transformers computes, so the layer runs the times_weight kernels on it.
  one_plus_weight,
};

// The MLP: down(act(gate(h)) · up(h)).
enum class MlpActivation : uint8_t {
  silu,       // SwiGLU (Qwen2, Llama, Mistral, Qwen3, Phi-3)
  gelu_tanh,  // GeGLU with the tanh GELU (Gemma 3: gelu_pytorch_tanh)
};

// The norms of a layer: input and post_attention ([C]); q and k ([D], Qwen3, Gemma 3: one RMSNorm over each
// head's D values of q and of k, after the projection and before RoPE); with sandwich norms (Gemma 3)
// attention_out and mlp_out ([C]), on the attention's and the MLP's outputs before their residual adds.
// post_attention is the norm entering the MLP, whatever the checkpoint calls it: Gemma 3's
// "pre_feedforward_layernorm" (its "post_attention_layernorm" is attention_out).
enum class LayerNorm : uint8_t { input, post_attention, q, k, attention_out, mlp_out };

struct RmsNorm {
  NormStyle style = NormStyle::times_weight;
  float eps = 1e-6f;
};

// A part of a fused projection: the projection its rows make, and how many rows.
struct FusedPart {
  LoraTarget target;
  uint32_t rows = 0;
};

// A module of the layer that holds weights: a norm, weight [out], or a projection y = x·Wᵀ (+ b),
// W [out, in], b [out]. A fused projection (Phi-3's qkv_proj [q; k; v], gate_up_proj [gate; up]) is a
// projection of its own, with the LoRA target of its own as PEFT names it; its weight is split by rows into
// the parts' weights when loaded, and the layer computes the parts (each with its rows of the adapter's B,
// and the adapter's A whole), which is the fused product split.
struct ModuleSpec {
  const char* name;                  // Hugging Face name under model.layers.{i}., e.g. "self_attn.q_proj"
  std::optional<LayerNorm> norm;     // a norm: which one
  std::optional<LoraTarget> target;  // a projection: which one, and the LoRA target that adapts it
  uint32_t out = 0, in = 0;
  bool bias = false;                 // from the config: qkv_bias, o_bias, mlp_bias
  std::vector<FusedPart> parts;      // a fused projection: its parts in row order (their rows sum to out)
};

// Where a projection's rows are in the fused projection that holds them.
struct FusedRows {
  LoraTarget fused;
  uint32_t begin = 0, end = 0;
};

struct LayerSpec {
  uint32_t hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0;  // C, I, H, KV, D
  RmsNorm norm;                                      // every norm of the layer
  MlpActivation activation = MlpActivation::silu;
  float attention_scale = 1;                         // softmax(q·kᵀ · scale): 1/√D (longrope: times its
                                                     // attention factor², which scales q and k alike;
                                                     // Gemma 3: query_pre_attn_scalar^-0.5)
  bool qk_norm = false;                              // q and k normed per head (LayerNorm::q, LayerNorm::k)
  bool sandwich_norms = false;                       // attention_out and mlp_out norms (Gemma 3)
  bool local_rope = false;                           // RoPE with ModelSpec::inv_freq_local (Gemma 3's sliding
                                                     // layers), else with inv_freq
  // Sliding-window attention (Mistral, Phi-3; Qwen2 and Qwen3 with use_sliding_window, on layers >=
  // max_window_layers): a token sees the last `window` positions, itself included (ops/attention.h: the row
  // kernels apply it where the context is longer than the window).
  std::optional<uint32_t> window;
  std::vector<ModuleSpec> modules;                   // in module order (the tensor table's)

  const ModuleSpec& projection(LoraTarget t) const;  // throws ls::Error when the layer has none
  bool has_projection(LoraTarget t) const;
  std::optional<FusedRows> fused_rows(LoraTarget part) const;  // nullopt unless a fused projection holds `part`
  // The product the recorded layer computes for q, k, v, o, gate, up or down: the projection, or its rows
  // of the fused projection that holds it (out = its rows, target = t, no parts).
  ModuleSpec product(LoraTarget t) const;
};

struct ModelSpec {
  uint32_t vocab = 0, hidden = 0;  // V, C
  bool tied = false;               // lm_head is the embedding
  // x = embed[ids] · scale: 1, Gemma 3 √C rounded to the config's dtype as transformers rounds it
  // (Gemma3TextScaledWordEmbedding: embed_scale.to(weight.dtype)): bf16 √640 = 25.25, not 25.298.
  float embedding_scale = 1;
  float logit_softcap = 0;         // logits = c·tanh(logits / c) (Gemma 3's final_logit_softcapping); 0: none
  RmsNorm final_norm;
  std::vector<float> inv_freq;     // [D/2] f32 RoPE inverse frequencies, rope_scaling applied (rope_inv_freq)
  std::vector<float> inv_freq_long;  // longrope: those of the long factors (rope_uses_long_factors); else empty
  std::vector<float> inv_freq_local;  // Gemma 3: the sliding layers' (rope_inv_freq_local); else empty
  std::vector<LayerSpec> layers;   // one per layer (layers may differ: attention window)
};

// From a parsed config (model/config.h): sizes, biases and window from the config, the rest from the
// family's row.
ModelSpec model_spec(const ModelConfig& c);
LayerSpec layer_spec(const ModelConfig& c, uint32_t layer);

}  // namespace ls::model
