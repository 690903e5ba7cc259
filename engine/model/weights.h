#pragma once
// A Qwen2/Qwen3/Phi-3/Gemma 3/Llama/Mistral model's weights on the device, kept in the dtype they were loaded in (bf16, f16
// or f32), except bf16 product weights, which tensor-core devices keep as f16 (docs/design.md
// "Precision"): the matmul kernels read them as they are. With a quantized base (QLoRA, docs/design.md
// "Quantized bases") the layers' projection weights are kept packed in 4 or 8 bits instead.
#include <filesystem>
#include <vector>

#include "model/architecture.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "ops/quant.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace ls::model {

struct LinearWeights {
  Tensor w;            // [out, in]; undefined when the weight is quantized (q)
  Tensor b;            // [out], undefined when the layer has no bias
  ops::QuantWeight q;  // the weight in packed form, with a quantized base
};

// Norm weights of NormStyle::one_plus_weight (Gemma 3) are kept as 1 + w in f32 (layer_spec.h).
struct LayerWeights {
  Tensor input_norm, post_attention_norm;  // [C] (post_attention: the norm entering the MLP)
  Tensor q_norm, k_norm;                   // [D], with LayerSpec::qk_norm (Qwen3, Gemma 3); else undefined
  Tensor attention_out_norm, mlp_out_norm; // [C], with LayerSpec::sandwich_norms (Gemma 3); else undefined
  LinearWeights q, k, v, o, gate, up, down;
  // q's, k's and v's weights in one allocation, [Nq + Nk + Nv, C], whose rows their w view (upload_weights, where
  // the device has VK_NV_cooperative_matrix2 and all three are f16 as stored): the backward's dx of all three is
  // then one product (model/layer.cpp). Else undefined.
  Tensor qkv;
};

struct ModelWeights {
  Tensor embed;                    // [V, C]; in system memory where embedding_in_host_memory says so
  std::vector<LayerWeights> layers;
  Tensor final_norm;               // [C]
  Tensor lm_head;                  // [V, C]; the embedding itself when tied
  Tensor inv_freq;                 // [D/2] f32 RoPE inverse frequencies (rope scaling applied)
  Tensor inv_freq_long;            // longrope: [D/2] f32 of the long factors (model::rope_uses_long_factors)
  Tensor inv_freq_local;           // Gemma 3: [D/2] f32 of the sliding layers (LayerSpec::local_rope)
  QuantType quant = QuantType::none;  // how the projection weights are kept
  Tensor quant_map;                // nf4: the absmax map the quantized weights share
  bool embed_in_host = false;      // embed is in system memory (embedding_in_host_memory)
  uint64_t device_bytes() const;   // the weights' device memory (a tied table counted once, a host one not)
};

// Whether an untied embedding table is kept in system memory rather than the GPU's (as llama.cpp keeps its
// token embeddings on the host): it only feeds a gather of the batch's rows (3.7 MB a 7B step of 512 tokens,
// 7 KB a decoded token, read over the bus), and it is 1.0 GiB of the 7B shape's GPU memory. Only where the
// device's memory is apart from the host's (vk::Memory::host_apart: discrete GPUs); a tied table is the
// lm_head's weight and stays. LORASTUDIO_EMBED_ON_GPU=1 keeps it on the GPU (measurement);
// LORASTUDIO_EMBED_IN_HOST=1 puts it in host-visible memory on any device (tests on lavapipe).
bool embedding_in_host_memory(bool host_apart, bool tied);

// The field of `w` that a row of the tensor table (model/architecture.h) fills (a quantized weight's .w
// stays undefined: its packed form is linear_of(w, e).q). A fused projection's row (qkv_proj, gate_up_proj)
// has no field of its own: upload_weights splits it into its parts', and these give its first part's (q,
// gate: the dtype and packing of the whole).
const Tensor& weight_of(const ModelWeights& w, const ExpectedTensor& e);
Tensor& weight_of(ModelWeights& w, const ExpectedTensor& e);
// The projection a weight or bias row belongs to.
const LinearWeights& linear_of(const ModelWeights& w, const ExpectedTensor& e);
LinearWeights& linear_of(ModelWeights& w, const ExpectedTensor& e);

// Checks the files against the config (model/architecture.h) and uploads every tensor of the table; with
// quant, the layers' projection weights are quantized on the host first (a fused projection part by part, as
// it is kept: for nf4 this is not bitsandbytes' quantization of the fused weight, whose double quantization
// groups the absmax of the whole and subtracts its mean; q8's blocks are the same when a part's size is a
// multiple of 32 values) (embeddings, lm_head and norms
// stay as loaded, as bitsandbytes leaves them; a quantized layer's biases are kept in
// ops::dequantized_dtype, the dtype of the products that add them).
ModelWeights upload_weights(vk::Device& device, const ModelConfig& config, const SafeTensors& files,
                            QuantType quant = QuantType::none);

// A loaded model: its folder, config and weights.
struct Model {
  std::filesystem::path dir;
  ModelConfig config;
  ModelWeights weights;
  // dir holds config.json and model.safetensors (or a sharded index). quant: see upload_weights. A multimodal
  // folder's tensor names are resolved from its files (config.h: resolve_weight_names).
  static Model load(vk::Device& device, const std::filesystem::path& dir, QuantType quant = QuantType::none);
};

}  // namespace ls::model
