#include "model/forward.h"

#include <cmath>

#include "error.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/copy_rows.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/norms.h"
#include "ops/rope.h"

namespace ls::model {

KvCache KvCache::allocate(vk::Device& device, const ModelConfig& c, uint32_t capacity, DType act) {
  KvCache cache;
  cache.capacity = capacity;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    cache.k.push_back(Tensor::empty(device, {1, capacity, c.num_kv_heads, c.head_dim}, act, "kv cache"));
    cache.v.push_back(Tensor::empty(device, {1, capacity, c.num_kv_heads, c.head_dim}, act, "kv cache"));
  }
  return cache;
}

namespace {

// y = x·Wᵀ + b, plus the adapter's low-rank term when it adapts this layer.
void linear(vk::Recorder& rec, const Tensor& y, const Tensor& x, const LinearWeights& w, const LoraAdapter* adapter,
            size_t layer, LoraTarget target) {
  if (adapter && adapter->at(layer, target).defined()) {
    const LoraPair& p = adapter->at(layer, target);
    Tensor t = Tensor::empty(rec.device(), {uint32_t(x.rows()), adapter->rank}, DType::f32, "lora t");
    ops::lora_forward(rec, y, t, x, w.w, w.b, p.a, p.b, adapter->scale());
  } else {
    ops::matmul_forward(rec, y, x, w.w, w.b);
  }
}

}  // namespace

void record_forward(vk::Recorder& rec, const Model& model, const LoraAdapter* adapter, const KvCache& cache,
                    const ForwardInputs& in, const Tensor& logits, DType act) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  vk::Device& dev = rec.device();
  const uint32_t T = uint32_t(in.ids.numel());
  const uint32_t C = c.hidden_size, H = c.num_heads, KV = c.num_kv_heads, D = c.head_dim, I = c.intermediate_size;
  if (cache.k.size() != c.num_layers) throw Error("record_forward: the KV cache has the wrong number of layers");
  if (cache.capacity < T) throw Error("record_forward: a chunk of " + std::to_string(T) + " tokens is longer than the KV cache");
  const bool all_rows = logits.rows() == T;  // (T = 1: the one row either way)

  Tensor x = Tensor::empty(dev, {T, C}, DType::f32, "residual");
  Tensor h = Tensor::empty(dev, {T, C}, act, "normed");
  Tensor rstd = Tensor::empty(dev, {T}, DType::f32, "rstd");
  Tensor q = Tensor::empty(dev, {1, T, H, D}, act, "q");
  Tensor k = Tensor::empty(dev, {1, T, KV, D}, act, "k");
  Tensor v = Tensor::empty(dev, {1, T, KV, D}, act, "v");
  Tensor attn = Tensor::empty(dev, {1, T, H, D}, act, "attention");
  Tensor proj = Tensor::empty(dev, {T, C}, DType::f32, "projection");
  Tensor gate = Tensor::empty(dev, {T, I}, act, "gate");
  Tensor up = Tensor::empty(dev, {T, I}, act, "up");
  const float scale = 1.0f / std::sqrt(float(D));

  {
    vk::Recorder::Label label(rec, "embedding");
    ops::embedding_forward(rec, x, w.embed, in.ids);
  }
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const LayerWeights& l = w.layers[i];
    {
      vk::Recorder::Label label(rec, "attention block");
      ops::rms_norm_forward(rec, h, rstd, x, l.input_norm, c.rms_norm_eps);
      linear(rec, q.reshape({T, H * D}), h, l.q, adapter, i, LoraTarget::q_proj);
      linear(rec, k.reshape({T, KV * D}), h, l.k, adapter, i, LoraTarget::k_proj);
      linear(rec, v.reshape({T, KV * D}), h, l.v, adapter, i, LoraTarget::v_proj);
      ops::rope_forward(rec, q, q, in.positions, w.inv_freq);
      ops::rope_forward(rec, k, k, in.positions, w.inv_freq);
      const Tensor kc = cache.k[i].reshape({cache.capacity, KV * D}), vc = cache.v[i].reshape({cache.capacity, KV * D});
      ops::copy_rows(rec, kc, k.reshape({T, KV * D}), in.step, {.dst_slot = int32_t(kPastSlot)});
      ops::copy_rows(rec, vc, v.reshape({T, KV * D}), in.step, {.dst_slot = int32_t(kPastSlot)});
      ops::attention_cached_forward(rec, attn, q, cache.k[i], cache.v[i], in.step, scale);
      linear(rec, proj, attn.reshape({T, H * D}), l.o, adapter, i, LoraTarget::o_proj);
      ops::add_forward(rec, x, x, proj);
    }
    {
      vk::Recorder::Label label(rec, "mlp block");
      ops::rms_norm_forward(rec, h, rstd, x, l.post_attention_norm, c.rms_norm_eps);
      linear(rec, gate, h, l.gate, adapter, i, LoraTarget::gate_proj);
      linear(rec, up, h, l.up, adapter, i, LoraTarget::up_proj);
      ops::silu_mul_forward(rec, gate, gate, up);
      linear(rec, proj, gate, l.down, adapter, i, LoraTarget::down_proj);
      ops::add_forward(rec, x, x, proj);
    }
  }
  vk::Recorder::Label label(rec, "lm head");
  if (all_rows) {
    ops::rms_norm_forward(rec, h, rstd, x, w.final_norm, c.rms_norm_eps);
    ops::matmul_forward(rec, logits, h, w.lm_head, Tensor());
  } else {
    if (logits.rows() != 1) throw Error("record_forward: logits must be [T, V] or [1, V], got " + logits.describe());
    Tensor x_last = Tensor::empty(dev, {1, C}, DType::f32, "last row");
    Tensor h_last = Tensor::empty(dev, {1, C}, act, "last row normed");
    ops::copy_rows(rec, x_last, x, in.step, {.rows = 1, .src_slot = int32_t(kLastRowSlot)});
    Tensor rstd_last = Tensor::empty(dev, {1}, DType::f32, "rstd");
    ops::rms_norm_forward(rec, h_last, rstd_last, x_last, w.final_norm, c.rms_norm_eps);
    ops::matmul_forward(rec, logits, h_last, w.lm_head, Tensor());
  }
}

}  // namespace ls::model
