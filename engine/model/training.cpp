#include "model/training.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "error.h"
#include "model/layer.h"
#include "ops/cross_entropy.h"
#include "ops/embedding.h"
#include "ops/matmul.h"

namespace ls::model {

namespace {

// The head's and the loss's buffers, f32 (the logits f32 or f16: logits_dtype), one set a step: M = B·T rows, K the rows the loss runs over,
// `chunk` rows of logits at a time.
struct LossBuffers {
  Tensor rstd, normed;     // (M), (M, C)  the final norm's
  Tensor row_loss, lse;    // (K)          per loss row
  Tensor dx;               // (M, C)       the residual stream's gradient
  Tensor h_rows, dh_rows;  // (K, C)       compact only: the normed rows with a target, and their gradient
  Tensor logits;           // (chunk, V)   one chunk of logits, then its gradient in place
  Tensor count;            // (2)          the counted targets
  Tensor zeros;            // (M)          for counting them
};

struct LossRow {
  Tensor LossBuffers::*field;
  const char* name;
  Shape shape;
  DType dtype = DType::f32;
};

// The table record_train_step allocates from and loss_buffers_bytes sums.
std::vector<LossRow> loss_table(uint32_t M, uint32_t K, uint32_t C, uint32_t V, uint32_t chunk, bool compact,
                                DType logits) {
  using L = LossBuffers;
  std::vector<LossRow> rows = {
      {&L::rstd, "rstd", {M}},         {&L::normed, "final normed", {M, C}},   {&L::row_loss, "row loss", {K}},
      {&L::lse, "lse", {K}},           {&L::dx, "d residual", {M, C}},
      {&L::logits, "logits chunk", {chunk, V}, logits},
      {&L::count, "counted targets", {2}}, {&L::zeros, "zeros", {M}},
  };
  if (compact) {
    rows.push_back({&L::h_rows, "final normed, rows with targets", {K, C}});
    rows.push_back({&L::dh_rows, "d normed, rows with targets", {K, C}});
  }
  return rows;
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

DType logits_dtype(bool coopmat2, bool coopmat, DType head_weight) {
  static const bool off = [] {  // LORASTUDIO_F16_LOGITS=0: f32 logits everywhere (measurement, session 13)
    const char* v = std::getenv("LORASTUDIO_F16_LOGITS");
    return v && std::string_view(v) == "0";
  }();
  return !off && products_in_f16(coopmat2, coopmat, false, head_weight) ? DType::f16 : DType::f32;
}

uint32_t logit_rows_per_chunk(uint32_t rows, uint32_t vocab, uint64_t max_binding, uint32_t logit_bytes) {
  // At most 128 MiB of logits (64 MiB where one binding cannot hold 256), as few chunks as that allows,
  // sized about equally (rather than full chunks and a small remainder that leaves the GPU idle), each a
  // multiple of 16 rows so every chunk's bindings stay aligned, and of 128 where the budget holds that many:
  // the lm_head's products then have no partly filled row tiles (the tensor-core GEMM's are 128 rows;
  // 416-row chunks ran its dx at 88 TFLOP/s on the H100, session 9). 128 MiB (256 before session 18) is
  // two chunks of 256 f16 rows for T = 512 and Qwen's vocabulary: 74 MiB less at 0.5B (1.5 GiB in all).
  // Big batches, whose logits would take over four such chunks: two chunks (more where half the rows pass
  // 1 GiB). At B8 (4,096 f16 rows) two of 2,048 rows took the step from 62.85 to 60.9 ms on the H200 for
  // 0.53 GiB more (three of 1,408 rows: 65.4 ms, their dx products on 42 tiles of 256; session 29, s28a).
  // LORASTUDIO_LOGIT_MIB overrides the budget (measurement).
  static const uint64_t forced_mib = [] {
    const char* v = std::getenv("LORASTUDIO_LOGIT_MIB");
    return v ? std::max<uint64_t>(1, std::strtoull(v, nullptr, 10)) : 0;
  }();
  const bool big_binding = max_binding >= (uint64_t(256) << 20);
  const uint64_t row_bytes = uint64_t(vocab) * logit_bytes;
  uint64_t budget = (big_binding ? uint64_t(128) : 64) << 20;
  if (forced_mib) {
    budget = (big_binding ? forced_mib : std::min<uint64_t>(forced_mib, 64)) << 20;
  } else if (big_binding && uint64_t(rows) * row_bytes > 4 * budget) {
    const uint64_t half = (uint64_t(rows) + 255) / 256 * 128;  // half the rows, in 128s
    budget = std::min<uint64_t>(uint64_t(1) << 30, half * row_bytes);
  }
  const uint64_t fit = budget / row_bytes;
  const uint64_t granule = fit >= 128 ? 128 : 16;
  const uint64_t most = std::max<uint64_t>(16, fit / granule * granule);
  const uint64_t chunks = (rows + most - 1) / most;
  const uint64_t even = ((rows + chunks - 1) / chunks + granule - 1) / granule * granule;
  return uint32_t(std::min<uint64_t>({even, most, rows}));
}

uint64_t loss_buffers_bytes(uint32_t B, uint32_t T, uint32_t K, uint32_t hidden, uint32_t vocab, uint64_t max_binding,
                            DType logits) {
  const uint32_t M = B * T, rows = K && K < M ? K : M;
  const uint32_t chunk = logit_rows_per_chunk(rows, vocab, max_binding, uint32_t(dtype_size(logits)));
  uint64_t bytes = 0;
  for (const LossRow& r : loss_table(M, rows, hidden, vocab, chunk, rows < M, logits)) {
    uint64_t n = dtype_size(r.dtype);
    for (uint32_t d : r.shape) n *= d;
    bytes += vk::Memory::footprint(n);
  }
  return bytes;
}

LoraAdapter flat_like(vk::Device& device, const LoraAdapter& adapter, bool copy_values) {
  constexpr uint64_t kAlign = 64;  // floats: 256 bytes, what the allocator rounds every tensor to (vk::Memory)
  auto padded = [&](const Tensor& t) { return (t.numel() + kAlign - 1) / kAlign * kAlign; };
  uint64_t total = 0;
  for (const auto& layer : adapter.layers)
    for (const auto& p : layer)
      if (p.defined()) total += padded(p.a) + padded(p.b);
  LoraAdapter out = adapter;
  out.storage = Tensor();
  if (total == 0 || total * 4 > device.report().max_storage_range) {
    for (auto& layer : out.layers)
      for (auto& p : layer) {
        if (!p.defined()) continue;
        Tensor a = Tensor::empty(device, p.a.shape(), DType::f32, "lora A"), b = Tensor::empty(device, p.b.shape(), DType::f32, "lora B");
        upload(a, copy_values ? download(p.a) : std::vector<float>(p.a.numel(), 0.0f));
        upload(b, copy_values ? download(p.b) : std::vector<float>(p.b.numel(), 0.0f));
        p = {a, b};
      }
    return out;
  }
  out.storage = Tensor::empty(device, {uint32_t(total), 1}, DType::f32, "lora matrices");
  std::vector<float> values(total, 0.0f);
  uint64_t at = 0;
  auto place = [&](Tensor& t) {
    if (copy_values) {
      const std::vector<float> v = download(t);
      std::copy(v.begin(), v.end(), values.begin() + ptrdiff_t(at));
    }
    t = out.storage.slice_rows(at, at + t.numel()).reshape(t.shape());
    at += padded(t);
  };
  for (auto& layer : out.layers)
    for (auto& p : layer)
      if (p.defined()) place(p.a), place(p.b);
  upload(out.storage, values);
  return out;
}

LoraAdapter zero_grads_like(vk::Device& device, const LoraAdapter& adapter) { return flat_like(device, adapter, false); }

void record_train_step(vk::Recorder& rec, const Model& model, const LoraAdapter& adapter, const LoraAdapter& grads,
                       const TrainBatch& batch, const Tensor& loss, const StepOptions& options) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  vk::Device& dev = rec.device();
  const uint32_t B = batch.B, T = batch.T, M = B * T;
  const uint32_t C = c.hidden_size, V = c.vocab_size;
  const float loss_scale = options.loss_scale;
  if (adapter.layers.size() != c.num_layers || grads.layers.size() != c.num_layers)
    throw Error("record_train_step: the adapter does not match the model's layers");
  if (options.dropout > 0 && !batch.dropout_seed.defined())
    throw Error("record_train_step: dropout needs the batch's dropout_seed tensor");
  // Activation gradients carry a loss scale, the power of two at or above the row count, so that a
  // mean over many tokens (dlogits ~ p / count) does not underflow where tensor cores round operands to
  // f16; the LoRA gradients drop it again. Exact in f32 (powers of two), so the f32 path is unchanged.
  const float grad_scale = std::exp2(std::ceil(std::log2(float(M))));

  // The layers' activations (model/layer_acts.h): with recomputation only every layer's input is kept.
  const ModelSpec spec = model_spec(c);
  // The MLP's operands that only tensor-core products read stay in f16 (model/layer_acts.h F16Operands).
  const LinearWeights& down = w.layers.at(0).down;
  const F16Operands f16 = f16_operands(products_in_f16(dev.coopmat2(), dev.coopmat(), down.q.defined(), down.w.dtype()),
                                       spec, adapter.targets);
  const std::vector<LayerActs> acts = plan_layer_acts(
      dev, spec, &adapter, B, T, DType::f32, options.recompute ? ActsPlan::recompute : ActsPlan::training, f16);
  const LayerRun run{.positions = batch.positions,
                     .inv_freq = rope_uses_long_factors(c, T) ? w.inv_freq_long : w.inv_freq,
                     .inv_freq_local = w.inv_freq_local,
                     .adapter = &adapter,
                     .grads = &grads,
                     .dropout = options.dropout,
                     .dropout_seed = batch.dropout_seed,
                     .grad_unscale = 1.0f / grad_scale,
                     .recomputing = options.recompute};
  embed_tokens(rec, spec, acts[0].x_in, w.embed, batch.ids);
  ResidualCarry carry;  // each layer's last add left to the next layer's input norm (not the last layer's)
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    carry.next_layer = i + 1 < c.num_layers;
    layer_forward(rec, spec.layers[i], w.layers[i], acts[i], run, i, &carry);
  }
  const Tensor& x = acts.back().x_out;
  // The backward's activation gradients, one set for all layers.
  const LayerActs d = plan_layer_grads(dev, spec.layers[0], B, T, f16);

  // Head and loss, over chunks of rows so that [K, V] f32 logits never exist at once (Qwen's 151,936
  // columns are 0.6 MB a row): per chunk, logits -> lse and row losses -> dlogits in place -> d(normed).
  // K = M, or the K rows of batch.loss_rows (gathered from the normed rows; their gradients go back to
  // the rows through loss_slots, 0 where a row has no target). The backward's normaliser (the number of
  // counted targets) comes first, from the targets alone.
  const bool compact = batch.loss_rows.defined();
  const uint32_t K = compact ? uint32_t(batch.loss_rows.numel()) : M;
  const DType logit_dtype = logits_dtype(dev.coopmat2(), dev.coopmat(), w.lm_head.dtype());
  const uint32_t chunk = logit_rows_per_chunk(K, V, dev.report().max_storage_range, uint32_t(dtype_size(logit_dtype)));
  LossBuffers buf;
  for (const LossRow& r : loss_table(M, K, C, V, chunk, compact, logit_dtype))
    buf.*r.field = Tensor::empty(dev, r.shape, r.dtype, r.name);
  // tmp: d.x_mid, scratch of the layers' backward, free until then. Without compaction the loss reads
  // the normed rows where they are and writes their gradient to tmp.
  const Tensor tmp = d.x_mid;
  if (!compact) buf.h_rows = buf.normed, buf.dh_rows = tmp;
  const Tensor &rstd_f = buf.rstd, &hf = buf.normed, &row_loss = buf.row_loss, &lse = buf.lse, &dx = buf.dx;
  const Tensor &h_rows = buf.h_rows, &dh_rows = buf.dh_rows, &logits = buf.logits, &count = buf.count;
  const Tensor& t_rows = compact ? batch.loss_targets : batch.targets;
  upload(buf.zeros, std::vector<float>(M, 0.0f));
  const Tensor& zeros = buf.zeros;
  const Tensor targets = t_rows.reshape({K, 1});
  {
    vk::Recorder::Label label(rec, kGroupLoss);
    norm_forward(rec, spec.final_norm, hf, rstd_f, x, w.final_norm);
    ops::cross_entropy_reduce(rec, count, zeros, batch.targets, V);
    if (compact) ops::gather_rows(rec, h_rows, hf, batch.loss_rows);
    for (uint32_t r0 = 0; r0 < K; r0 += chunk) {
      const uint32_t n = std::min(chunk, K - r0);
      const Tensor lg = logits.slice_rows(0, n), tg = targets.slice_rows(r0, r0 + n).reshape({n});
      const Tensor rl = row_loss.reshape({K, 1}).slice_rows(r0, r0 + n).reshape({n});
      const Tensor ls = lse.reshape({K, 1}).slice_rows(r0, r0 + n).reshape({n});
      ops::matmul_forward(rec, lg, h_rows.slice_rows(r0, r0 + n), w.lm_head, Tensor());
      logit_softcap(rec, spec, lg);  // Gemma 3: capped in place; the backward's softcap undoes it
      ops::cross_entropy_rows(rec, rl, ls, lg, tg);
      ops::cross_entropy_backward(rec, lg, lg, tg, ls, count, loss_scale * grad_scale,  // dlogits in place
                                  spec.logit_softcap);
      ops::matmul_backward_x(rec, dh_rows.slice_rows(r0, r0 + n), lg, w.lm_head);  // d hf
    }
    ops::cross_entropy_reduce(rec, loss, row_loss, t_rows, V);
    if (compact) ops::gather_rows(rec, tmp, dh_rows, batch.loss_slots);  // back to the rows, 0 for slot -1
    norm_backward(rec, spec.final_norm, dx, tmp, x, w.final_norm, rstd_f);
  }
  // Backward through the layers; dx is the gradient of the current layer's output. Recomputing, a layer's
  // forward runs again first, writing everything but its output (the next layer's input, still held).
  for (uint32_t i = c.num_layers; i-- > 0;) {
    if (options.recompute) {
      LayerActs again = acts[i];
      again.x_out = Tensor();
      layer_forward(rec, spec.layers[i], w.layers[i], again, run, i);
    }
    layer_backward(rec, spec.layers[i], w.layers[i], acts[i], d, run, i, dx, i > 0);
  }
}

}  // namespace ls::model
