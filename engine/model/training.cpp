#include "model/training.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "error.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/norms.h"
#include "ops/rope.h"

namespace ls::model {

namespace {

// What one projection saves for its backward.
struct Linear {
  const LinearWeights* w = nullptr;
  const LoraPair* lora = nullptr;  // null: not adapted
  const LoraPair* grad = nullptr;
  Tensor x, t;                     // input, and x̃·Aᵀ when adapted
  ops::LoraDropout dropout;        // on the adapter's input
};

// Saved activations of one layer.
struct LayerActs {
  Tensor x_in, rstd1, h1, q, k, v, attn, lse, x_mid, rstd2, h2, gate, up, act;
  Linear q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
};

Tensor f32(vk::Device& dev, Shape s, const char* what) { return Tensor::empty(dev, std::move(s), DType::f32, what); }

void forward_linear(vk::Recorder& rec, Linear& l, const Tensor& y, const Tensor& x, float scale, uint32_t rank) {
  l.x = x;
  if (l.lora) {
    if (!l.t.defined()) l.t = f32(rec.device(), {uint32_t(x.rows()), rank}, "lora t");
    ops::lora_forward(rec, y, l.t, x, l.w->w, l.w->b, l.lora->a, l.lora->b, scale, l.dropout);
  } else {
    ops::matmul_forward(rec, y, x, l.w->w, l.w->b);
  }
}

// dx (+)= dy·W (+ the adapter's term), unless dx is undefined; LoRA gradients accumulate.
void backward_linear(vk::Recorder& rec, const Linear& l, const Tensor& dx, const Tensor& dy, bool accumulate,
                     float scale, uint32_t rank, float grad_unscale) {
  if (l.lora) {
    Tensor dt = f32(rec.device(), {uint32_t(dy.rows()), rank}, "lora dt");
    ops::lora_backward(rec, dx, l.grad->a, l.grad->b, dt, dy, l.x, l.t, l.w->w, l.lora->a, l.lora->b, scale, accumulate,
                       grad_unscale, l.dropout);
  } else if (dx.defined()) {
    ops::matmul_backward_x(rec, dx, dy, l.w->w, accumulate);
  }
}

}  // namespace

void fill_loss_rows(std::span<const int32_t> targets, std::span<int32_t> rows, std::span<int32_t> row_targets,
                    std::span<int32_t> slots) {
  if (slots.size() != targets.size() || row_targets.size() != rows.size())
    throw Error("fill_loss_rows: " + std::to_string(targets.size()) + " targets, " + std::to_string(slots.size()) +
                " slots, " + std::to_string(rows.size()) + " rows and " + std::to_string(row_targets.size()) +
                " row targets");
  size_t k = 0;
  int32_t pad = -1;  // a row without a target
  for (size_t m = 0; m < targets.size(); ++m) {
    slots[m] = -1;
    if (targets[m] < 0) {
      if (pad < 0) pad = int32_t(m);
      continue;
    }
    if (k == rows.size())
      throw Error("training step: a batch has more rows with a target than the " + std::to_string(rows.size()) +
                  " its loss was recorded for");
    slots[m] = int32_t(k);
    rows[k] = int32_t(m);
    row_targets[k++] = targets[m];
  }
  for (; k < rows.size(); ++k) rows[k] = std::max(pad, 0), row_targets[k] = -100;
}

uint32_t logit_rows_per_chunk(uint32_t rows, uint32_t vocab, uint64_t max_binding) {
  // At most 256 MiB of f32 logits (64 MiB where one binding cannot hold 256), as few chunks as that
  // allows, sized about equally (rather than full chunks and a small remainder that leaves the GPU
  // idle), each a multiple of 16 rows so every chunk's bindings stay aligned.
  const uint64_t budget = uint64_t(max_binding >= (uint64_t(256) << 20) ? 256 : 64) << 20;
  const uint64_t most = std::max<uint64_t>(16, budget / (uint64_t(vocab) * 4) / 16 * 16);
  const uint64_t chunks = (rows + most - 1) / most;
  const uint64_t even = ((rows + chunks - 1) / chunks + 15) / 16 * 16;
  return uint32_t(std::min<uint64_t>({even, most, rows}));
}

LoraAdapter zero_grads_like(vk::Device& device, const LoraAdapter& adapter) {
  LoraAdapter g = adapter;
  for (auto& layer : g.layers)
    for (auto& p : layer) {
      if (!p.defined()) continue;
      p.a = Tensor::empty(device, p.a.shape(), DType::f32, "lora grad A");
      p.b = Tensor::empty(device, p.b.shape(), DType::f32, "lora grad B");
      upload(p.a, std::vector<float>(p.a.numel(), 0.0f));
      upload(p.b, std::vector<float>(p.b.numel(), 0.0f));
    }
  return g;
}

void record_train_step(vk::Recorder& rec, const Model& model, const LoraAdapter& adapter, const LoraAdapter& grads,
                       const TrainBatch& batch, const Tensor& loss, const StepOptions& options) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  vk::Device& dev = rec.device();
  const uint32_t B = batch.B, T = batch.T, M = B * T;
  const uint32_t C = c.hidden_size, H = c.num_heads, KV = c.num_kv_heads, D = c.head_dim, I = c.intermediate_size,
                 V = c.vocab_size, r = adapter.rank;
  const float dropout = options.dropout, loss_scale = options.loss_scale;
  if (adapter.layers.size() != c.num_layers || grads.layers.size() != c.num_layers)
    throw Error("record_train_step: the adapter does not match the model's layers");
  if (dropout > 0 && !batch.dropout_seed.defined())
    throw Error("record_train_step: dropout needs the batch's dropout_seed tensor");
  const float s = adapter.scale(), att_scale = 1.0f / std::sqrt(float(D)), eps = c.rms_norm_eps;
  // Activation gradients carry a loss scale, the power of two at or above the row count, so that a
  // mean over many tokens (dlogits ~ p / count) does not underflow where tensor cores round operands to
  // f16; the LoRA gradients drop it again. Exact in f32 (powers of two), so the f32 path is unchanged.
  const float grad_scale = std::exp2(std::ceil(std::log2(float(M))));

  // What each layer's forward saves for its backward. With recomputation only every layer's input is
  // kept (layer_in); the rest is one set of tensors shared by all layers, refilled by running the
  // layer's forward again just before its backward (same inputs, same dropout masks, same results).
  const bool recompute = options.recompute;
  std::vector<LayerActs> acts(recompute ? 1 : c.num_layers);
  std::vector<Tensor> layer_in(c.num_layers);
  auto allocate = [&](LayerActs& a) {
    a.rstd1 = f32(dev, {M}, "rstd");
    a.h1 = f32(dev, {M, C}, "normed");
    a.q = f32(dev, {B, T, H, D}, "q");
    a.k = f32(dev, {B, T, KV, D}, "k");
    a.v = f32(dev, {B, T, KV, D}, "v");
    a.attn = f32(dev, {B, T, H, D}, "attention");
    a.lse = f32(dev, {B, H, T}, "lse");
    a.x_mid = f32(dev, {M, C}, "residual mid");
    a.rstd2 = f32(dev, {M}, "rstd");
    a.h2 = f32(dev, {M, C}, "normed");
    a.gate = f32(dev, {M, I}, "gate");
    a.up = f32(dev, {M, I}, "up");
    a.act = f32(dev, {M, I}, "silu*up");
  };
  // Outputs of o_proj and down_proj, only needed until they join the residual: one pair for all layers.
  const Tensor proj = f32(dev, {M, C}, "o_proj out"), down = f32(dev, {M, C}, "down out");
  // Layer i's forward from x_in; the next residual goes to x_out unless that is undefined (recomputing).
  auto forward_layer = [&](uint32_t i, const Tensor& x_in, const Tensor& x_out) {
    const LayerWeights& lw = w.layers[i];
    LayerActs& a = acts[recompute ? 0 : i];
    if (!a.h1.defined()) allocate(a);
    auto bind = [&](Linear& l, const LinearWeights& lwts, LoraTarget t) {
      l.w = &lwts;
      l.lora = l.grad = nullptr;
      if (adapter.at(i, t).defined()) l.lora = &adapter.at(i, t), l.grad = &grads.at(i, t);
      // PEFT gives each adapted projection its own dropout module, so its own mask.
      if (dropout > 0)
        l.dropout = {.p = dropout, .seed = batch.dropout_seed, .stream = i * uint32_t(kLoraTargetCount) + uint32_t(t)};
    };
    bind(a.q_proj, lw.q, LoraTarget::q_proj);
    bind(a.k_proj, lw.k, LoraTarget::k_proj);
    bind(a.v_proj, lw.v, LoraTarget::v_proj);
    bind(a.o_proj, lw.o, LoraTarget::o_proj);
    bind(a.gate_proj, lw.gate, LoraTarget::gate_proj);
    bind(a.up_proj, lw.up, LoraTarget::up_proj);
    bind(a.down_proj, lw.down, LoraTarget::down_proj);

    a.x_in = x_in;
    std::optional<vk::Recorder::Label> group;
    group.emplace(rec, kGroupNorms);
    ops::rms_norm_forward(rec, a.h1, a.rstd1, x_in, lw.input_norm, eps);
    group.emplace(rec, kGroupAttention);
    forward_linear(rec, a.q_proj, a.q.reshape({M, H * D}), a.h1, s, r);
    forward_linear(rec, a.k_proj, a.k.reshape({M, KV * D}), a.h1, s, r);
    forward_linear(rec, a.v_proj, a.v.reshape({M, KV * D}), a.h1, s, r);
    ops::rope_forward(rec, a.q, a.q, batch.positions, w.inv_freq);
    ops::rope_forward(rec, a.k, a.k, batch.positions, w.inv_freq);
    ops::attention_forward(rec, a.attn, a.lse, a.q, a.k, a.v, att_scale);
    forward_linear(rec, a.o_proj, proj, a.attn.reshape({M, H * D}), s, r);
    ops::add_forward(rec, a.x_mid, x_in, proj);
    group.emplace(rec, kGroupNorms);
    ops::rms_norm_forward(rec, a.h2, a.rstd2, a.x_mid, lw.post_attention_norm, eps);
    group.emplace(rec, kGroupMlp);
    forward_linear(rec, a.gate_proj, a.gate, a.h2, s, r);
    forward_linear(rec, a.up_proj, a.up, a.h2, s, r);
    ops::silu_mul_forward(rec, a.act, a.gate, a.up);
    forward_linear(rec, a.down_proj, down, a.act, s, r);
    if (x_out.defined()) ops::add_forward(rec, x_out, a.x_mid, down);
  };

  Tensor x = f32(dev, {M, C}, "residual");
  {
    vk::Recorder::Label label(rec, kGroupEmbedding);
    ops::embedding_forward(rec, x, w.embed, batch.ids);
  }
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    layer_in[i] = x;
    Tensor x_next = f32(dev, {M, C}, "residual");
    forward_layer(i, x, x_next);
    x = x_next;
  }
  // Head and loss, over chunks of rows so that [K, V] f32 logits never exist at once (Qwen's 151,936
  // columns are 0.6 MB a row): per chunk, logits -> lse and row losses -> dlogits in place -> d(normed).
  // K = M, or the K rows of batch.loss_rows (gathered from the normed rows; their gradients go back to
  // the rows through loss_slots, 0 where a row has no target). The backward's normaliser (the number of
  // counted targets) comes first, from the targets alone.
  const bool compact = batch.loss_rows.defined();
  const uint32_t K = compact ? uint32_t(batch.loss_rows.numel()) : M;
  Tensor rstd_f = f32(dev, {M}, "rstd"), hf = f32(dev, {M, C}, "final normed");
  Tensor row_loss = f32(dev, {K}, "row loss"), lse = f32(dev, {K}, "lse");
  Tensor dx = f32(dev, {M, C}, "d residual"), tmp = f32(dev, {M, C}, "d scratch");
  const Tensor h_rows = compact ? f32(dev, {K, C}, "final normed, rows with targets") : hf;
  const Tensor dh_rows = compact ? f32(dev, {K, C}, "d normed, rows with targets") : tmp;
  const Tensor& t_rows = compact ? batch.loss_targets : batch.targets;
  const uint32_t chunk = logit_rows_per_chunk(K, V, dev.report().max_storage_range);
  Tensor logits = f32(dev, {chunk, V}, "logits chunk");
  Tensor count = f32(dev, {2}, "counted targets"), zeros = f32(dev, {M}, "zeros");
  upload(zeros, std::vector<float>(M, 0.0f));
  const Tensor targets = t_rows.reshape({K, 1});
  {
    vk::Recorder::Label label(rec, kGroupLoss);
    ops::rms_norm_forward(rec, hf, rstd_f, x, w.final_norm, eps);
    ops::cross_entropy_reduce(rec, count, zeros, batch.targets, V);
    if (compact) ops::embedding_forward(rec, h_rows, hf, batch.loss_rows);  // gathers the rows
    for (uint32_t r0 = 0; r0 < K; r0 += chunk) {
      const uint32_t n = std::min(chunk, K - r0);
      const Tensor lg = logits.slice_rows(0, n), tg = targets.slice_rows(r0, r0 + n).reshape({n});
      const Tensor rl = row_loss.reshape({K, 1}).slice_rows(r0, r0 + n).reshape({n});
      const Tensor ls = lse.reshape({K, 1}).slice_rows(r0, r0 + n).reshape({n});
      ops::matmul_forward(rec, lg, h_rows.slice_rows(r0, r0 + n), w.lm_head, Tensor());
      ops::cross_entropy_rows(rec, rl, ls, lg, tg);
      ops::cross_entropy_backward(rec, lg, lg, tg, ls, count, loss_scale * grad_scale);  // dlogits in place
      ops::matmul_backward_x(rec, dh_rows.slice_rows(r0, r0 + n), lg, w.lm_head);  // d hf
    }
    ops::cross_entropy_reduce(rec, loss, row_loss, t_rows, V);
    if (compact) ops::embedding_forward(rec, tmp, dh_rows, batch.loss_slots);  // back to the rows, 0 for slot -1
    ops::rms_norm_backward(rec, dx, Tensor(), tmp, x, w.final_norm, rstd_f);
  }
  // Backward through the layers; dx is d(residual out) of the current layer.
  Tensor d_act = f32(dev, {M, I}, "d act"), d_gate = f32(dev, {M, I}, "d gate"), d_up = f32(dev, {M, I}, "d up");
  Tensor d_attn = f32(dev, {B, T, H, D}, "d attention");
  Tensor dq = f32(dev, {B, T, H, D}, "dq"), dk = f32(dev, {B, T, KV, D}, "dk"), dv = f32(dev, {B, T, KV, D}, "dv");
  Tensor dh = f32(dev, {M, C}, "d normed");
  for (uint32_t i = c.num_layers; i-- > 0;) {
    if (recompute) forward_layer(i, layer_in[i], Tensor());
    const LayerWeights& lw = w.layers[i];
    const LayerActs& a = acts[recompute ? 0 : i];
    // The first layer's input comes from the frozen embedding: nothing needs its gradient.
    const bool need_dx_in = i > 0;
    std::optional<vk::Recorder::Label> group;
    group.emplace(rec, kGroupMlp);
    // MLP: x_out = x_mid + down(silu(gate) * up), gate/up from h2 = norm(x_mid).
    backward_linear(rec, a.down_proj, d_act, dx, false, s, r, 1.0f / grad_scale);
    ops::silu_mul_backward(rec, d_gate, d_up, d_act, a.gate, a.up);
    backward_linear(rec, a.gate_proj, dh, d_gate, false, s, r, 1.0f / grad_scale);
    backward_linear(rec, a.up_proj, dh, d_up, true, s, r, 1.0f / grad_scale);
    group.emplace(rec, kGroupNorms);
    ops::rms_norm_backward(rec, tmp, Tensor(), dh, a.x_mid, lw.post_attention_norm, a.rstd2);
    ops::add_forward(rec, dx, dx, tmp);  // d x_mid
    group.emplace(rec, kGroupAttention);
    // Attention: x_mid = x_in + o(attn(rope(q), rope(k), v)), q/k/v from h1 = norm(x_in).
    backward_linear(rec, a.o_proj, d_attn.reshape({M, H * D}), dx, false, s, r, 1.0f / grad_scale);
    ops::attention_backward(rec, dq, dk, dv, d_attn, a.q, a.k, a.v, a.attn, a.lse, att_scale);
    ops::rope_backward(rec, dq, dq, batch.positions, w.inv_freq);
    ops::rope_backward(rec, dk, dk, batch.positions, w.inv_freq);
    const Tensor d_h1 = need_dx_in ? dh : Tensor();
    backward_linear(rec, a.q_proj, d_h1, dq.reshape({M, H * D}), false, s, r, 1.0f / grad_scale);
    backward_linear(rec, a.k_proj, d_h1, dk.reshape({M, KV * D}), true, s, r, 1.0f / grad_scale);
    backward_linear(rec, a.v_proj, d_h1, dv.reshape({M, KV * D}), true, s, r, 1.0f / grad_scale);
    if (!need_dx_in) continue;
    group.emplace(rec, kGroupNorms);
    ops::rms_norm_backward(rec, tmp, Tensor(), dh, a.x_in, lw.input_norm, a.rstd1);
    ops::add_forward(rec, dx, dx, tmp);  // d x_in
  }
}

}  // namespace ls::model
