#include "model/forward.h"

#include "error.h"
#include "ops/copy_rows.h"
#include "ops/matmul.h"

namespace ls::model {

KvCache KvCache::allocate(vk::Device& device, const ModelConfig& c, uint32_t capacity, DType act, uint32_t sequences) {
  KvCache cache;
  cache.capacity = capacity;
  cache.sequences = sequences;
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    cache.k.push_back(Tensor::empty(device, layer_shape(c, capacity, sequences), act, "kv cache"));
    cache.v.push_back(Tensor::empty(device, layer_shape(c, capacity, sequences), act, "kv cache"));
  }
  return cache;
}

Shape KvCache::layer_shape(const ModelConfig& c, uint32_t capacity, uint32_t sequences) {
  return {sequences, capacity, c.num_kv_heads, c.head_dim};
}

uint64_t KvCache::bytes(const ModelConfig& c, uint32_t capacity, DType act, uint32_t sequences) {
  uint64_t one = dtype_size(act);
  for (uint32_t d : layer_shape(c, capacity, sequences)) one *= d;
  return 2 * uint64_t(c.num_layers) * vk::Memory::footprint(one);
}

void record_forward(vk::Recorder& rec, const Model& model, const LoraAdapter* adapter, const KvCache& cache,
                    const ForwardInputs& in, const Tensor& logits, DType act) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  vk::Device& dev = rec.device();
  const uint32_t T = uint32_t(in.ids.numel()), C = c.hidden_size;
  if (cache.k.size() != c.num_layers) throw Error("record_forward: the KV cache has the wrong number of layers");
  if (in.rows_are_sequences) {
    if (cache.sequences != T || logits.rows() != T)
      throw Error("record_forward: " + std::to_string(T) + " sequences of one token each need as many caches (" +
                  std::to_string(cache.sequences) + ") and logits rows (" + logits.describe() + ")");
  } else if (cache.capacity < T) {
    throw Error("record_forward: a chunk of " + std::to_string(T) + " tokens is longer than the KV cache");
  } else if (cache.sequences != 1) {
    throw Error("record_forward: a chunk of one sequence on " + std::to_string(cache.sequences) + " caches");
  }
  const bool all_rows = logits.rows() == T;  // (T = 1: the one row either way)

  const ModelSpec spec = model_spec(c);
  std::vector<LayerActs> acts = plan_layer_acts(dev, spec, adapter, 1, T, act, ActsPlan::inference);
  if (in.long_rope && !w.inv_freq_long.defined()) throw Error("record_forward: the model has no long RoPE factors");
  const LayerRun run{.positions = in.positions,
                     .inv_freq = in.long_rope ? w.inv_freq_long : w.inv_freq,
                     .inv_freq_local = w.inv_freq_local,
                     .step = in.step,
                     .adapter = adapter,
                     .rows_are_sequences = in.rows_are_sequences,
                     .key_bound = in.key_bound};
  embed_tokens(rec, spec, acts[0].x_in, w.embed, in.ids);
  ResidualCarry carry;  // prefill: each layer's down added to x by the next layer's input norm (not the last's)
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    acts[i].k_cache = cache.k[i];
    acts[i].v_cache = cache.v[i];
    carry.next_layer = i + 1 < c.num_layers;
    layer_forward(rec, spec.layers[i], w.layers[i], acts[i], run, i, &carry);
  }
  // The final norm goes through the layers' (free) normed and rstd tensors.
  const Tensor &x = acts.back().x_out, &h = acts.back().h1, &rstd = acts.back().rstd1;
  vk::Recorder::Label label(rec, "lm head");
  if (all_rows) {
    norm_forward(rec, spec.final_norm, h, rstd, x, w.final_norm);
    ops::matmul_forward(rec, logits, h, w.lm_head, Tensor());
    logit_softcap(rec, spec, logits);
  } else {
    if (logits.rows() != 1) throw Error("record_forward: logits must be [T, V] or [1, V], got " + logits.describe());
    Tensor x_last = Tensor::empty(dev, {1, C}, DType::f32, "last row");
    Tensor h_last = Tensor::empty(dev, {1, C}, act, "last row normed");
    ops::copy_rows(rec, x_last, x, in.step, {.rows = 1, .src_slot = int32_t(kLastRowSlot)});
    Tensor rstd_last = Tensor::empty(dev, {1}, DType::f32, "rstd");
    norm_forward(rec, spec.final_norm, h_last, rstd_last, x_last, w.final_norm);
    ops::matmul_forward(rec, logits, h_last, w.lm_head, Tensor());
    logit_softcap(rec, spec, logits);
  }
}

}  // namespace ls::model
