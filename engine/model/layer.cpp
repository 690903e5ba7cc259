// The gradient policy of the backward: activation gradients (d.*) are written (=); LoRA gradients
// (run.grads) and dres, the residual stream's gradient, accumulate (+=). The one activation gradient
// read by several projections, d h (of h1 or h2), is written by the first of them and added to by the
// rest.
#include "model/layer.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "error.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/convert.h"
#include "ops/decode_layer.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/matvec_norm.h"
#include "ops/norms.h"
#include "ops/quant.h"
#include "ops/rope.h"

namespace ls::model {

namespace {

// The adapter's pair on a projection, and its gradients' (training): its own, or for a part of a fused
// projection the fused pair's A whole and the part's rows of B: y_part = x·W_partᵀ + s·(x̃·Aᵀ)·B_partᵀ are
// the fused product's rows, and the parts' gradients of A add up to the fused one's. `owner` is the target
// the adapter holds, whose dropout mask and kept x̃·Aᵀ (lora_t) the parts share, as PEFT's one module does.
struct Adapted {
  LoraPair pair, grad;
  LoraTarget owner;
};
std::optional<Adapted> lora_of(const LayerSpec& s, const LayerRun& run, uint32_t layer, LoraTarget t) {
  if (!run.adapter) return std::nullopt;
  auto grad_of = [&](LoraTarget owner) { return run.grads ? run.grads->at(layer, owner) : LoraPair{}; };
  if (run.adapter->at(layer, t).defined()) return Adapted{run.adapter->at(layer, t), grad_of(t), t};
  const std::optional<FusedRows> f = s.fused_rows(t);
  if (!f || !run.adapter->at(layer, f->fused).defined()) return std::nullopt;
  auto rows = [&](LoraPair p) {
    if (p.defined()) p.b = p.b.slice_rows(f->begin, f->end);
    return p;
  };
  return Adapted{rows(run.adapter->at(layer, f->fused)), rows(grad_of(f->fused)), f->fused};
}

// PEFT gives each adapted projection its own dropout module, so its own mask.
ops::LoraDropout dropout_of(const LayerRun& run, uint32_t layer, LoraTarget t) {
  if (run.dropout <= 0) return {};
  return {.p = run.dropout,
          .seed = run.dropout_seed,
          .stream = layer * uint32_t(kLoraStreamsPerLayer) + uint32_t(stream_target(t))};
}

// y = x·Wᵀ + b, plus the adapter's term where it adapts this projection (t = x̃·Aᵀ kept in a.lora_t); with
// accumulate, y += that (a residual add in the product). A quantized weight goes through ops/quant.h's forms of
// the same products.
// With rope, the output rotated by the product's split reduce where it can (ops::RopeInReduce; not a quantized
// weight's product): rope->applied says whether it was.
void project(vk::Recorder& rec, const LayerSpec& s, const LayerRun& run, uint32_t layer, LoraTarget target,
             const LinearWeights& w, const LayerActs& a, const Tensor& y, const Tensor& x, bool accumulate = false,
             ops::RopeInReduce* rope = nullptr) {
  const std::optional<Adapted> ad = lora_of(s, run, layer, target);
  if (rope) rope->applied = false;
  if (ad && w.q.defined())
    ops::quant_lora_forward(rec, y, a.lora_t[size_t(ad->owner)], x, w.q, w.b, ad->pair.a, ad->pair.b,
                            run.adapter->scale(), dropout_of(run, layer, ad->owner), accumulate);
  else if (ad)
    ops::lora_forward(rec, y, a.lora_t[size_t(ad->owner)], x, w.w, w.b, ad->pair.a, ad->pair.b, run.adapter->scale(),
                      dropout_of(run, layer, ad->owner), accumulate, rope);
  else if (w.q.defined())
    ops::quant_linear_forward(rec, y, x, w.q, w.b, accumulate);
  else
    ops::matmul_forward(rec, y, x, w.w, w.b, accumulate, rope);
}

// Decoding (inference, a few rows): whether the norm of x before these projections runs inside their products
// (ops/matvec_norm.h), which needs no adapter term on any of them and their weights all plain or all quantized
// in one format; y is each one's output.
struct NormedProjection {
  LoraTarget target;
  const LinearWeights& w;
  Tensor y;
};
bool norm_folds(const LayerSpec& s, const LayerRun& run, uint32_t layer, const LayerActs& a, const Tensor& x,
                const Tensor& norm_w, std::initializer_list<NormedProjection> projections) {
  if (!a.k_cache.defined() || projections.size() == 0) return false;
  const QuantType format = projections.begin()->w.q.type;
  for (const NormedProjection& p : projections) {
    if (lora_of(s, run, layer, p.target) || p.w.q.type != format) return false;
    const bool fits = p.w.q.defined() ? ops::norm_matvec_fits(p.y, x, norm_w, {&p.w.q}, p.w.b)
                                      : ops::norm_matvec_fits(p.y, x, norm_w, {p.w.w, p.w.b});
    if (!fits) return false;
  }
  return true;
}

// Whether two tensors are one: the inference set updates the residual stream in place (x_in = x_mid = x_out).
bool same_tensor(const Tensor& a, const Tensor& b) {
  const vk::BufferRange ra = a.range(), rb = b.range();
  return ra.alloc == rb.alloc && ra.offset == rb.offset && ra.size == rb.size;
}

// Training: whether the down product adds into x_out (which the post-attention norm's pass set to x_mid) instead of
// an add pass after it. LORASTUDIO_DOWN_ADDS=0 keeps the add pass (measurement).
bool down_adds_into_stream() {
  const char* v = std::getenv("LORASTUDIO_DOWN_ADDS");  // (read while recording: tests switch it)
  return !(v && std::string_view(v) == "0");
}

// Training: whether a layer's last residual add may be left to the next layer's input norm (ResidualCarry).
bool add_into_norm() {
  const char* v = std::getenv("LORASTUDIO_ADD_INTO_NORM");  // (read while recording: tests switch it)
  return !(v && std::string_view(v) == "0");
}

ops::WeightOperand weight_operand(const LinearWeights& w) {
  return w.q.defined() ? ops::WeightOperand(w.q) : ops::WeightOperand(w.w);
}

// Whether projection t is a plain product (no adapter term, bias or quantized weight): one whose split sums an op
// reading its output may add up itself (ops/split_sums.h).
bool plain_product(const LayerSpec& s, const LayerRun& run, uint32_t layer, LoraTarget t, const LinearWeights& w) {
  return !lora_of(s, run, layer, t) && !w.b.defined() && !w.q.defined();
}

// dx (+)= dy·W (+ the adapter's term), unless dx is undefined; the LoRA gradients accumulate. x is the
// projection's forward input. A quantized weight is read (or dequantized) for dx only.
void project_backward(vk::Recorder& rec, const LayerSpec& s, const LayerRun& run, uint32_t layer,
                      LoraTarget target, const LinearWeights& w, const LayerActs& a, const Tensor& x, const Tensor& dx,
                      const Tensor& dy, bool accumulate) {
  const ops::WeightOperand weight = weight_operand(w);
  if (const std::optional<Adapted> ad = lora_of(s, run, layer, target)) {
    const LoraPair& g = ad->grad;
    Tensor dt = Tensor::empty(rec.device(), {uint32_t(dy.rows()), run.adapter->rank}, DType::f32, "lora dt");
    ops::lora_backward(rec, dx, g.a, g.b, dt, dy, x, a.lora_t[size_t(ad->owner)], weight, ad->pair.a, ad->pair.b,
                       run.adapter->scale(), accumulate, run.grad_unscale, dropout_of(run, layer, ad->owner));
  } else if (dx.defined()) {
    ops::matmul_backward_x(rec, dx, dy, weight, accumulate);
  }
}

// q's, k's and v's backward as one dx product where their weights share an allocation (LayerWeights::qkv):
// d h1 = [dq dk dv]·[Wq; Wk; Wv] (dq, dk and dv converted to f16 side by side, one dispatch), then each adapter's
// dx term dt·A; the adapters' gradients as project_backward takes them. At 0.5B B1 this is one product with a
// reduction of 1152 instead of three (two of 128) each after a conversion of its own, which share one scratch
// slot and accumulate into d h1 one after another: 6 stages, ~70 us a layer on the H100 (session 34's trace).
// Not with dropout (its dx terms go through the mask); returns false where it does not apply.
bool qkv_backward_fused(vk::Recorder& rec, const LayerSpec& s, const LayerWeights& w, const LayerActs& a,
                        const LayerRun& run, uint32_t layer, const Tensor& d_h1, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
  if (!qkv_backward_fuses() || !w.qkv.defined() || !d_h1.defined() || run.dropout > 0) return false;
  for (const Tensor* g : {&dq, &dk, &dv})
    if (g->dtype() != DType::f32) return false;
  const uint32_t M = uint32_t(a.x_in.rows());
  const Tensor gq = dq.reshape({M, s.heads * s.head_dim}), gk = dk.reshape({M, s.kv_heads * s.head_dim}),
               gv = dv.reshape({M, s.kv_heads * s.head_dim});
  struct Term {
    Tensor dt, a;  // dx += dt·A
  };
  std::vector<Term> terms;
  for (const auto& [t, lw, dy] : {std::tuple<LoraTarget, const LinearWeights&, const Tensor&>{LoraTarget::q_proj, w.q, gq},
                                  {LoraTarget::k_proj, w.k, gk}, {LoraTarget::v_proj, w.v, gv}}) {
    const std::optional<Adapted> ad = lora_of(s, run, layer, t);
    if (!ad) continue;
    Tensor dt = Tensor::empty(rec.device(), {M, run.adapter->rank}, DType::f32, "lora dt");
    ops::lora_backward(rec, Tensor(), ad->grad.a, ad->grad.b, dt, dy, a.h1, a.lora_t[size_t(ad->owner)],
                       ops::WeightOperand(lw.w), ad->pair.a, ad->pair.b, run.adapter->scale(), false,
                       run.grad_unscale, {});
    terms.push_back({dt, ad->pair.a});
  }
  // f16 as the products read it from f16 weights (they round an f32 operand to f16 themselves); f32 otherwise (a
  // device without coopmat2, where only LORASTUDIO_QKV_PLACE=1 shares the allocation: the exact path, tests).
  const uint32_t n = w.qkv.dim(0);
  const DType packed_dtype = w.qkv.dtype() == DType::f16 ? DType::f16 : DType::f32;
  const Tensor packed = Tensor::view(
      rec.device(), rec.scratch(uint64_t(M) * n * dtype_size(packed_dtype), vk::Recorder::kScratchCm2A), {M, n},
      packed_dtype);
  ops::concat_cols_forward(rec, packed, gq, gk, gv);
  // the first adapter's term in the product's epilogue, the others after it
  if (terms.empty()) ops::matmul_backward_x(rec, d_h1, packed, w.qkv, false);
  else ops::matmul_backward_x_lora(rec, d_h1, packed, w.qkv, terms[0].dt, terms[0].a, false);
  for (size_t i = 1; i < terms.size(); ++i) ops::matmul_backward_x(rec, d_h1, terms[i].dt, terms[i].a, true);
  return true;
}

// gated = act(gate)·up, and its backward.
void mlp_activation_forward(vk::Recorder& rec, MlpActivation f, const Tensor& gated, const Tensor& gate,
                            const Tensor& up) {
  switch (f) {
    case MlpActivation::silu: return ops::silu_mul_forward(rec, gated, gate, up);
    case MlpActivation::gelu_tanh: return ops::gelu_tanh_mul_forward(rec, gated, gate, up);
  }
}
void mlp_activation_backward(vk::Recorder& rec, MlpActivation f, const Tensor& d_gate, const Tensor& d_up,
                             const Tensor& d_gated, const Tensor& gate, const Tensor& up) {
  switch (f) {
    case MlpActivation::silu: return ops::silu_mul_backward(rec, d_gate, d_up, d_gated, gate, up);
    case MlpActivation::gelu_tanh: return ops::gelu_tanh_mul_backward(rec, d_gate, d_up, d_gated, gate, up);
  }
}

ops::GluActivation glu_of(MlpActivation f) {
  return f == MlpActivation::silu ? ops::GluActivation::silu : ops::GluActivation::gelu_tanh;
}

// Decoding one token through a plain layer (no adapter, quantized weight or bias but q's, k's and v's; no sandwich
// or q/k norms, no window; the stream updated in place): the whole layer in one dispatch where the persistent
// kernel takes it (ops::decode_layer_forward, opt-in), the same bits as the dispatches layer_forward records.
bool decode_whole_layer(vk::Recorder& rec, const LayerSpec& s, const LayerWeights& w, const LayerActs& a,
                        const LayerRun& run, uint32_t layer, const ops::QkvRope& qkv) {
  if (s.sandwich_norms || s.qk_norm || !same_tensor(a.x_mid, a.x_in) || !same_tensor(a.x_out, a.x_mid)) return false;
  const uint64_t cache_rows = a.k_cache.numel() / (uint64_t(s.kv_heads) * s.head_dim);
  if (s.window.value_or(0) != 0 && *s.window < cache_rows) return false;  // (a window past the cache sees it all)
  for (const auto& [t, lw] : {std::pair<LoraTarget, const LinearWeights&>{LoraTarget::o_proj, w.o},
                              {LoraTarget::gate_proj, w.gate}, {LoraTarget::up_proj, w.up},
                              {LoraTarget::down_proj, w.down}})
    if (!plain_product(s, run, layer, t, lw)) return false;
  const ops::DecodeLayer l{.x = a.x_in, .input_norm = w.input_norm, .post_norm = w.post_attention_norm, .qkv = qkv,
                           .q = a.q, .k_cache = a.k_cache, .v_cache = a.v_cache, .attn = a.attn, .wo = w.o.w,
                           .w_gate = w.gate.w, .w_up = w.up.w, .w_down = w.down.w,
                           .gated = a.gated.reshape({1, uint32_t(a.gated.numel())}), .eps = s.norm.eps,
                           .scale = s.attention_scale, .activation = glu_of(s.activation)};
  if (!ops::decode_layer_fits(rec.device(), l)) return false;
  vk::Recorder::Label label(rec, kGroupAttention);
  ops::decode_layer_forward(rec, l);
  return true;
}

}  // namespace

bool qkv_backward_fuses() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_QKV_FUSED");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}

void embed_tokens(vk::Recorder& rec, const ModelSpec& spec, const Tensor& x, const Tensor& embed, const Tensor& ids) {
  vk::Recorder::Label label(rec, kGroupEmbedding);
  ops::embedding_forward(rec, x, embed, ids);
  if (spec.embedding_scale != 1) ops::scale_forward(rec, x, x, spec.embedding_scale);
}

void logit_softcap(vk::Recorder& rec, const ModelSpec& spec, const Tensor& logits) {
  if (spec.logit_softcap > 0) ops::softcap_forward(rec, logits, logits, spec.logit_softcap);
}

void norm_forward(vk::Recorder& rec, const RmsNorm& norm, const Tensor& y, const Tensor& rstd, const Tensor& x,
                  const Tensor& w) {
  switch (norm.style) {
    case NormStyle::times_weight:
    case NormStyle::one_plus_weight:  // w holds 1 + w (model/weights.h)
      return ops::rms_norm_forward(rec, y, rstd, x, w, norm.eps);
  }
}

void norm_backward(vk::Recorder& rec, const RmsNorm& norm, const Tensor& dx, const Tensor& dy, const Tensor& x,
                   const Tensor& w, const Tensor& rstd, bool accumulate, const ops::NormBackwardMore& more) {
  switch (norm.style) {
    case NormStyle::times_weight:
    case NormStyle::one_plus_weight: return ops::rms_norm_backward(rec, dx, dy, x, w, rstd, accumulate, more);
  }
}

void layer_forward(vk::Recorder& rec, const LayerSpec& s, const LayerWeights& w, const LayerActs& a,
                   const LayerRun& run, uint32_t layer, ResidualCarry* carry) {
  const uint32_t M = uint32_t(a.x_in.rows()), H = s.heads, KV = s.kv_heads, D = s.head_dim;
  const Tensor& inv_freq = s.local_rope ? run.inv_freq_local : run.inv_freq;
  std::optional<vk::Recorder::Label> group;
  // q and k, or with qk_norm their projections before the per-head norms; (M, H·D), (M, KV·D), (M, KV·D)
  const Tensor q_out = (s.qk_norm ? a.q_proj : a.q).reshape({M, H * D});
  const Tensor k_out = (s.qk_norm ? a.k_proj : a.k).reshape({M, KV * D}), v_out = a.v.reshape({M, KV * D});
  const bool fold_input_norm = !(carry && carry->pending()) &&
                               norm_folds(s, run, layer, a, a.x_in, w.input_norm,
                                          {{LoraTarget::q_proj, w.q, q_out}, {LoraTarget::k_proj, w.k, k_out},
                                           {LoraTarget::v_proj, w.v, v_out}});
  // and, without qk_norm, RoPE and the KV-cache write in the same pass
  const ops::QkvRope qkv_rope{.wq = w.q.w, .wk = w.k.w, .wv = w.v.w, .bq = w.q.b, .bk = w.k.b, .bv = w.v.b,
                              .positions = run.positions, .inv_freq = inv_freq, .offsets = run.step,
                              .slot = int32_t(kPastSlot), .packed_q = w.q.q, .packed_k = w.k.q, .packed_v = w.v.q};
  const bool fold_rope = fold_input_norm && !s.qk_norm && !run.rows_are_sequences &&
                         ops::norm_qkv_rope_fits(a.q, a.k_cache, a.v_cache, a.x_in, w.input_norm, qkv_rope);
  if (fold_rope && M == 1 && decode_whole_layer(rec, s, w, a, run, layer, qkv_rope)) return;
  group.emplace(rec, kGroupNorms);
  if (carry && carry->pending()) {
    // x_in = the previous layer's x_mid + down, and its norm, in one pass (in place: x += down)
    ops::rms_norm_forward_add(rec, a.h1, a.rstd1, a.x_in, carry->base, carry->b, w.input_norm, s.norm.eps, Tensor(),
                              carry->sums);
    carry->base = carry->b = Tensor();
    carry->sums = {};
  } else if (!fold_input_norm) {
    norm_forward(rec, s.norm, a.h1, a.rstd1, a.x_in, w.input_norm);  // (M, C)
  }
  group.emplace(rec, kGroupAttention);
  ops::RopeInReduce q_rope{.positions = run.positions, .inv_freq = inv_freq, .head_dim = D}, k_rope = q_rope;
  if (fold_rope) {
    // Decoding: the input norm, q, k, v, RoPE and the cache write in one pass
    ops::norm_qkv_rope_forward(rec, a.q, a.k_cache, a.v_cache, a.x_in, w.input_norm, s.norm.eps, qkv_rope);
  } else if (fold_input_norm) {
    // Decoding: the input norm inside each product (one stage for the norm and q, k, v, not two)
    for (const auto& [lw, y] : {std::pair<const LinearWeights&, Tensor>{w.q, q_out}, {w.k, k_out}, {w.v, v_out}}) {
      if (lw.q.defined()) ops::norm_matvec_forward(rec, y, a.x_in, w.input_norm, s.norm.eps, lw.q, lw.b);
      else ops::norm_matvec_forward(rec, y, a.x_in, w.input_norm, s.norm.eps, lw.w, lw.b);
    }
  } else {
    // Split products' reduces after all three products' slices: one stage for the slices, one for the reduces
    // (vk::Recorder::DeferScope), not a stage each as they are recorded.
    // Training: RoPE on q and k by their reduces where the products split (no pass of its own below).
    vk::Recorder::DeferScope side_by_side(rec);
    const bool rotate = !a.k_cache.defined() && !s.qk_norm;
    project(rec, s, run, layer, LoraTarget::q_proj, w.q, a, q_out, a.h1, false, rotate ? &q_rope : nullptr);
    project(rec, s, run, layer, LoraTarget::k_proj, w.k, a, k_out, a.h1, false, rotate ? &k_rope : nullptr);
    project(rec, s, run, layer, LoraTarget::v_proj, w.v, a, v_out, a.h1);
  }
  if (s.qk_norm) {
    // q and k normed over each head's D values (one row per token and head), before RoPE.
    norm_forward(rec, s.norm, a.q.reshape({M * H, D}), a.rstd_q, a.q_proj.reshape({M * H, D}), w.q_norm);
    norm_forward(rec, s.norm, a.k.reshape({M * KV, D}), a.rstd_k, a.k_proj.reshape({M * KV, D}), w.k_norm);
  }
  if (a.k_cache.defined() && run.rows_are_sequences) {
    // Batched generation: row r is sequence r's next token, at position positions[r], which is also how many
    // tokens its cache (cache r of [M, S, KV, D]) holds; it attends over that cache alone.
    ops::rope_kv_cache_forward(rec, a.q, a.k, a.v, a.k_cache, a.v_cache, run.positions, inv_freq, run.positions, 0,
                               1);
    ops::attention_cached_forward(rec, a.attn.reshape({M, 1, H, D}), a.q.reshape({M, 1, H, D}), a.k_cache,
                                  a.v_cache, run.positions, s.attention_scale, s.window.value_or(0), true);
  } else if (a.k_cache.defined()) {
    // Inference: RoPE on q, and k and v into the cache at step[kPastSlot] (k rotated), in one pass; q attends
    // over the cache up to itself.
    if (!fold_rope)
      ops::rope_kv_cache_forward(rec, a.q, a.k, a.v, a.k_cache, a.v_cache, run.positions, inv_freq, run.step,
                                 int32_t(kPastSlot));
    ops::attention_cached_forward(rec, a.attn, a.q, a.k_cache, a.v_cache, run.step, s.attention_scale,
                                  s.window.value_or(0), false, run.key_bound);
  } else {
    // Training: q attends over the batch row's own k and v; lse is kept for the backward.
    if (!q_rope.applied) ops::rope_forward(rec, a.q, a.q, run.positions, inv_freq);  // (B, T, H, D)
    if (!k_rope.applied) ops::rope_forward(rec, a.k, a.k, run.positions, inv_freq);  // (B, T, KV, D)
    ops::attention_forward(rec, a.attn, a.lse, a.q, a.k, a.v, s.attention_scale, s.window.value_or(0));
  }
  // The residual stream updated in place (inference, no sandwich norms): x += o_proj(attn) and, below,
  // x += down_proj(gated) in the products themselves, not through o and down and an add each.
  const bool in_place = !s.sandwich_norms && same_tensor(a.x_mid, a.x_in) && same_tensor(a.x_out, a.x_mid);
  const Tensor attn = a.attn.reshape({M, H * D});
  const bool plain_add = !in_place && !s.sandwich_norms;
  // Decoding: the post-attention norm, gate, up and their activation in one pass (no bias on gate or up)
  const bool fold_post_norm = in_place && !w.gate.b.defined() && !w.up.b.defined() &&
                              norm_folds(s, run, layer, a, a.x_mid, w.post_attention_norm,
                                         {{LoraTarget::gate_proj, w.gate, a.gated}, {LoraTarget::up_proj, w.up, a.gated}});
  // The adds into the stream done by the norms' passes that read the sums next (rms_norm_forward_add), not by a
  // pass of their own or the products (training; and prefill, in place, where the post-attention norm is a pass of
  // its own and o a plain product): x_mid = x_in + o in the post-attention norm's pass, where o's split sums are
  // added up too (its reduce no stage of its own), where o is a plain product (no adapter, bias or quantized weight).
  const bool plain_o = plain_product(s, run, layer, LoraTarget::o_proj, w.o);
  const bool f32_stream = a.x_mid.dtype() == DType::f32 && a.o.defined() && a.o.dtype() == DType::f32;
  const bool prefill_adds = in_place && !fold_post_norm && plain_o && f32_stream && add_into_norm();
  ops::SplitSums o_sums;
  if (in_place && !prefill_adds) {
    project(rec, s, run, layer, LoraTarget::o_proj, w.o, a, a.x_mid, attn, true);  // (M, C)
  } else if ((plain_add && f32_stream && plain_o) || prefill_adds) {
    o_sums = ops::matmul_forward_unreduced(rec, a.o, attn, w.o.w);  // (M, C)
  } else {
    project(rec, s, run, layer, LoraTarget::o_proj, w.o, a, a.o, attn);  // (M, C)
    if (s.sandwich_norms) {
      norm_forward(rec, s.norm, a.out_normed, a.rstd_o, a.o, w.attention_out_norm);  // (M, C)
      ops::add_forward(rec, a.x_mid, a.x_in, a.out_normed);
    }
  }
  group.emplace(rec, kGroupNorms);
  // x_out = x_mid + down left to the next layer's input norm (carry: training, and prefill in place), or, training's
  // last layer, x_out starting as x_mid (the norm's pass writes the sum twice) with the down product adding into it:
  // the layer's last residual add done in the next pass or in the product's epilogue, not a pass of its own.
  const bool stream_f32 = plain_add && a.x_mid.dtype() == DType::f32 && a.x_out.defined() && a.x_out.dtype() == DType::f32;
  const bool carries = carry && carry->next_layer && (stream_f32 || (prefill_adds && a.down.defined())) &&
                       add_into_norm();
  const bool down_adds = stream_f32 && !carries && down_adds_into_stream();
  if ((plain_add && a.x_mid.dtype() == DType::f32) || prefill_adds) {
    // x_mid = x_in + o and its norm in one pass (in place: x += o)
    ops::rms_norm_forward_add(rec, a.h2, a.rstd2, a.x_mid, a.x_in, a.o, w.post_attention_norm, s.norm.eps,
                              down_adds ? a.x_out : Tensor(), o_sums);
  } else if (!fold_post_norm) {  // (folding implies in_place: x_mid is already the sum)
    if (plain_add) ops::add_forward(rec, a.x_mid, a.x_in, a.o);
    norm_forward(rec, s.norm, a.h2, a.rstd2, a.x_mid, w.post_attention_norm);  // (M, C)
  }
  group.emplace(rec, kGroupMlp);
  if (fold_post_norm) {
    const ops::GluActivation act = glu_of(s.activation);
    if (w.gate.q.defined())
      ops::norm_glu_matvec_forward(rec, a.gated, a.x_mid, w.post_attention_norm, s.norm.eps, w.gate.q, w.up.q, act);
    else
      ops::norm_glu_matvec_forward(rec, a.gated, a.x_mid, w.post_attention_norm, s.norm.eps, w.gate.w, w.up.w, act);
  } else {
    project(rec, s, run, layer, LoraTarget::gate_proj, w.gate, a, a.gate, a.h2);  // (M, I)
    project(rec, s, run, layer, LoraTarget::up_proj, w.up, a, a.up, a.h2);        // (M, I)
    mlp_activation_forward(rec, s.activation, a.gated, a.gate, a.up);            // (M, I)
  }
  if (carries) {
    // x_out = x_mid + down, in the next layer's input norm; a plain down product's split sums added up there too
    ops::SplitSums sums;
    if (plain_product(s, run, layer, LoraTarget::down_proj, w.down))
      sums = ops::matmul_forward_unreduced(rec, a.down, a.gated, w.down.w);  // (M, C)
    else
      project(rec, s, run, layer, LoraTarget::down_proj, w.down, a, a.down, a.gated);
    carry->base = a.x_mid, carry->b = a.down, carry->sums = sums;
    return;
  }
  if (in_place || down_adds) {
    project(rec, s, run, layer, LoraTarget::down_proj, w.down, a, a.x_out, a.gated, true);  // (M, C)
    return;
  }
  // A recompute (no x_out) without sandwich norms: the backward reads neither down's output nor, with no adapter
  // on it, anything its product makes.
  if (!a.x_out.defined() && !s.sandwich_norms && !lora_of(s, run, layer, LoraTarget::down_proj)) return;
  project(rec, s, run, layer, LoraTarget::down_proj, w.down, a, a.down, a.gated);          // (M, C)
  if (s.sandwich_norms) {  // (its statistics also when recomputing: the backward reads them)
    norm_forward(rec, s.norm, a.out_normed, a.rstd_down, a.down, w.mlp_out_norm);         // (M, C)
    if (a.x_out.defined()) ops::add_forward(rec, a.x_out, a.x_mid, a.out_normed);
  } else if (a.x_out.defined()) {
    ops::add_forward(rec, a.x_out, a.x_mid, a.down);
  }
}

// layer_forward read bottom-up; dres is d x_out on entry.
void layer_backward(vk::Recorder& rec, const LayerSpec& s, const LayerWeights& w, const LayerActs& a,
                    const LayerActs& d, const LayerRun& run, uint32_t layer, const Tensor& dres, bool input_grad) {
  // The layer's dispatches in fewest stages: LoRA's weight gradients and the q, k, v products' dx beside what
  // they do not wait for, not each after the last (0.5B B1: 12 stages from q's adapter to v's dx).
  vk::Recorder::ScheduleScope schedule(rec);
  const uint32_t M = uint32_t(a.x_in.rows()), H = s.heads, KV = s.kv_heads, D = s.head_dim;
  const Tensor& inv_freq = s.local_rope ? run.inv_freq_local : run.inv_freq;
  std::optional<vk::Recorder::Label> group;
  group.emplace(rec, kGroupMlp);
  // x_out = x_mid + down(act(gate(h2)) · up(h2))  (sandwich norms: x_mid + norm(down(...)))
  Tensor d_down = dres;
  if (s.sandwich_norms) {
    norm_backward(rec, s.norm, d.down, dres, a.down, w.mlp_out_norm, a.rstd_down);
    d_down = d.down;
  }
  // d gate and d up from down's dx product with the activation's backward in its epilogue (d gated never written),
  // where down has no adapter and a kernel takes it; else the product, then the activation's backward.
  const ops::GluActivation glu = glu_of(s.activation);
  if (lora_of(s, run, layer, LoraTarget::down_proj) ||
      !ops::matmul_backward_x_glu(rec, d.gate, d.up, d_down, weight_operand(w.down), a.gate, a.up, glu)) {
    project_backward(rec, s, run, layer, LoraTarget::down_proj, w.down, a, a.gated, d.gated, d_down, false);  // (M, I)
    mlp_activation_backward(rec, s.activation, d.gate, d.up, d.gated, a.gate, a.up);                   // (M, I)
  }
  // gate's and up's dx side by side, up's into d attn (free until o_proj's backward below), added by the norm's
  // backward: the two products run in one stage instead of the second accumulating after the first (the 7B
  // shape's 112 tiles each leave SMs idle). Where d attn is not [M, C] f32, up's accumulates into gate's.
  const Tensor d_up_part = d.attn.numel() == uint64_t(M) * s.hidden && d.attn.dtype() == DType::f32
                               ? d.attn.reshape({M, s.hidden}) : Tensor();
  ops::SplitSums gate_sums, up_sums;
  {
    // With split products, both products' slices in one stage and their reduces in the next (DeferScope), where
    // they write apart and neither projection has an adapter: an adapter's dx term may be a second product into dx
    // after the first (with dropout, ops::lora_backward), which must not run before the held-back reduce.
    std::optional<vk::Recorder::DeferScope> side_by_side;
    const bool adapted = lora_of(s, run, layer, LoraTarget::gate_proj) || lora_of(s, run, layer, LoraTarget::up_proj);
    if (d_up_part.defined() && !adapted) side_by_side.emplace(rec);
    if (d_up_part.defined() && !adapted && d.h2.dtype() == DType::f32) {
      // Their split sums added up by the norm's backward below (the reduces no stage of their own)
      gate_sums = ops::matmul_backward_x_unreduced(rec, d.h2, d.gate, weight_operand(w.gate));  // (M, C)
      up_sums = ops::matmul_backward_x_unreduced(rec, d_up_part, d.up, weight_operand(w.up));
    } else {
      project_backward(rec, s, run, layer, LoraTarget::gate_proj, w.gate, a, a.h2, d.h2, d.gate, false);  // (M, C)
      project_backward(rec, s, run, layer, LoraTarget::up_proj, w.up, a, a.h2, d_up_part.defined() ? d_up_part : d.h2,
                       d.up, !d_up_part.defined());
    }
  }
  group.emplace(rec, kGroupNorms);
  // dres = d x_mid, its f16 copy for o_proj's dx product (not with --grad-checkpoint: there the copy took the H100's
  // peak 1.2% past the plan in memory_plan_test, session 19 call 5)
  norm_backward(rec, s.norm, dres, d.h2, a.x_mid, w.post_attention_norm, a.rstd2, true,
                {.dy2 = d_up_part, .f16_copy = !s.sandwich_norms && !run.recomputing, .dy_sums = gate_sums,
                 .dy2_sums = up_sums});
  group.emplace(rec, kGroupAttention);
  // x_mid = x_in + o(attention(rope(q(h1)), rope(k(h1)), v(h1)))
  // (sandwich norms: x_mid = x_in + norm(o(...)))
  Tensor d_o = dres;
  if (s.sandwich_norms) {
    norm_backward(rec, s.norm, d.o, dres, a.o, w.attention_out_norm, a.rstd_o);
    d_o = d.o;
  }
  const Tensor attn = a.attn.reshape({M, H * D});
  // A plain o product's split sums added up by the attention backward's delta pass (its reduce no stage of its own),
  // where that pass reads dO (the cooperative-matrix-2 flash kernels)
  ops::SplitSums do_sums;
  if (plain_product(s, run, layer, LoraTarget::o_proj, w.o) && d.attn.dtype() == DType::f32 &&
      ops::attention_backward_takes_split_do(rec.device(), a.q, a.k, a.v, s.window.value_or(0)))
    do_sums = ops::matmul_backward_x_unreduced(rec, d.attn.reshape({M, H * D}), d_o, w.o.w);
  else
    project_backward(rec, s, run, layer, LoraTarget::o_proj, w.o, a, attn, d.attn.reshape({M, H * D}), d_o, false);
  ops::attention_backward(rec, d.q, d.k, d.v, d.attn, a.q, a.k, a.v, a.attn, a.lse, s.attention_scale,
                          s.window.value_or(0), do_sums);
  ops::rope_backward(rec, d.q, d.q, run.positions, inv_freq);
  ops::rope_backward(rec, d.k, d.k, run.positions, inv_freq);
  Tensor dq = d.q, dk = d.k;  // the gradients of q_proj(h1), k_proj(h1)
  if (s.qk_norm) {
    norm_backward(rec, s.norm, d.q_proj.reshape({M * H, D}), d.q.reshape({M * H, D}), a.q_proj.reshape({M * H, D}),
                  w.q_norm, a.rstd_q);
    norm_backward(rec, s.norm, d.k_proj.reshape({M * KV, D}), d.k.reshape({M * KV, D}),
                  a.k_proj.reshape({M * KV, D}), w.k_norm, a.rstd_k);
    dq = d.q_proj;
    dk = d.k_proj;
  }
  const Tensor d_h1 = input_grad ? d.h1 : Tensor();  // undefined: only the LoRA gradients
  if (!qkv_backward_fused(rec, s, w, a, run, layer, d_h1, dq, dk, d.v)) {
    project_backward(rec, s, run, layer, LoraTarget::q_proj, w.q, a, a.h1, d_h1, dq.reshape({M, H * D}), false);
    project_backward(rec, s, run, layer, LoraTarget::k_proj, w.k, a, a.h1, d_h1, dk.reshape({M, KV * D}), true);
    project_backward(rec, s, run, layer, LoraTarget::v_proj, w.v, a, a.h1, d_h1, d.v.reshape({M, KV * D}), true);
  }
  if (!input_grad) return;
  group.emplace(rec, kGroupNorms);
  // dres = d x_in, its f16 copy for the previous layer's down_proj dx product (not when that layer's forward
  // runs again first: its products' own conversions would take the copy's place)
  norm_backward(rec, s.norm, dres, d.h1, a.x_in, w.input_norm, a.rstd1, true,
                {.f16_copy = !s.sandwich_norms && !run.recomputing});
}

}  // namespace ls::model
