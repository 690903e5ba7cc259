#include "train/step_scratch.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "model/layer.h"
#include "model/layer_acts.h"
#include "ops/attention_flash.h"
#include "ops/matmul_detail.h"
#include "ops/quant_weight.h"
#include "vk/memory.h"
#include "vk/recorder.h"

namespace ls::train {

namespace {

using model::LoraTarget;
using Rec = vk::Recorder;

using ops::detail::kSkinnyMax;  // a product with min(M, N) up to this is "skinny"
using ops::detail::kTile;       // the scalar GEMM's output tile

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A product as ops/matmul.cpp's gemm sees it: C [M, N] = A [M, K]·B.
struct Product {
  uint32_t M = 0, N = 0, K = 0;
  bool lora_own = false;     // A, B and C f32 and no epilogue: the adapter's own products (the skinny kernel's)
  bool long_rows = false;    // the skinny kernel's long operand is contiguous along K (then it never splits K)
  const model::ModuleSpec* weight = nullptr;  // B is this projection's stored weight
  bool a_f16 = false;        // A is already f16 (model/layer_acts.h F16Operands): nothing to convert
};

// Scratch slots, grown as vk::Recorder::scratch grows them: a larger request allocates a new buffer and
// the outgrown one stays alive with the dispatches that used it.
class Slots {
 public:
  void request(uint32_t slot, uint64_t bytes) {
    if (bytes == 0 || bytes <= held_[slot]) return;
    held_[slot] = vk::Memory::footprint(bytes);
    total_[slot] += held_[slot];
  }
  uint64_t total(uint32_t slot) const { return total_[slot]; }

 private:
  std::array<uint64_t, Rec::kScratchSlots> held_{}, total_{};
};

// vk::Recorder's split scratch in a ScheduleScope: a buffer per request, in the scope's order, grown as the slots.
class ScopedSplits {
 public:
  void begin() { turn_ = 0; }
  void request(uint64_t bytes) {
    const size_t n = turn_++;
    if (n >= held_.size()) held_.resize(n + 1, 0);
    if (bytes <= held_[n]) return;
    held_[n] = vk::Memory::footprint(bytes);
    total_ += held_[n];
  }
  uint64_t total() const { return total_; }

 private:
  std::vector<uint64_t> held_;
  size_t turn_ = 0;
  uint64_t total_ = 0;
};

class StepWalk {
 public:
  StepWalk(const model::ModelSpec& spec, const PlanDevice& device, const StepScratchOptions& o)
      : spec_(spec), dev_(device), o_(o), M_(o.B * o.T),
        in_f16_(model::products_in_f16(device.coopmat2, device.coopmat, o.quantize != QuantType::none, o.weight_dtype)),
        f16_(model::f16_operands(in_f16_, spec, o.targets)) {}

  StepScratch run() {
    const size_t L = spec_.layers.size();
    for (size_t i = 0; i < L; ++i) layer_forward(spec_.layers[i]);
    head();
    // With --grad-checkpoint each layer's forward runs again before its backward: the same requests as the
    // first forward, which grow nothing but take their turns in the split ring (request_split).
    for (size_t i = L; i-- > 0;) {
      if (o_.recompute) layer_forward(spec_.layers[i], true);
      layer_backward(spec_.layers[i], i > 0);
    }
    uint64_t deferred = 0;
    for (uint32_t i = 0; i < Rec::kDeferredSlots; ++i) deferred += slots_.total(Rec::kScratchDeferred + i);
    // (and on coopmat2 the split products' tile counters: vk::Recorder::tile_counters)
    const uint64_t counters =
        dev_.coopmat2 && ops::detail::cm2_fixup_enabled()
            ? vk::Memory::footprint(uint64_t(Rec::kCounterSlots) * Rec::kCounterWords * 4)
            : 0;
    return {.split_k = slots_.total(Rec::kScratchSplitK) + slots_.total(Rec::kScratchSplitRing) +
                       slots_.total(Rec::kScratchSplitRing + 1) + deferred + scoped_.total() + counters,
            .attention = slots_.total(Rec::kScratchAttention) + slots_.total(Rec::kScratchAttention + 1) +
                         slots_.total(Rec::kScratchAttention + 2),
            .dropout = slots_.total(Rec::kScratchDropout),
            .conversion = slots_.total(Rec::kScratchCm2A),
            .dequantized = dequantized_.total(0),
            .attention_rows = attention_rows_};
  }

 private:
  bool targeted(LoraTarget t) const { return std::find(o_.targets.begin(), o_.targets.end(), t) != o_.targets.end(); }
  // A product carries the adapter's term when its projection is a target, or the fused one holding it.
  bool adapted(const model::LayerSpec& s, LoraTarget t) const {
    const auto f = s.fused_rows(t);
    return targeted(t) || (f && targeted(f->fused));
  }

  // ops/matmul.cpp dispatch_one, by the rules of ops/matmul_detail.h: the skinny kernel splits K over up to
  // 512 slices when its long side gives too few workgroups; other products split K (split_k) when they have
  // too few output tiles.
  uint64_t split_k_bytes(const Product& p) const {
    const uint64_t MN4 = uint64_t(p.M) * p.N * 4;
    uint64_t s = 1;
    if (p.lora_own && std::min(p.M, p.N) <= kSkinnyMax && p.K >= 32) {
      const uint32_t L = p.N > kSkinnyMax ? p.N : p.M;
      if (ops::detail::skinny_rows_fit(L, p.long_rows, dev_.subgroup_size)) return 0;  // the rows kernel
      s = ops::detail::skinny_splits(L, p.M, p.N, p.K, dev_.max_binding);
    } else {
      s = ops::detail::split_k(ceil_div(p.N, kTile) * ceil_div(p.M, kTile), p.M, p.N, p.K, dev_.max_binding);
    }
    return s > 1 ? s * MN4 : 0;
  }

  // vk::Recorder::split_scratch: small requests take a buffer each in the layer backward's ScheduleScope, the two
  // ring slots in turn elsewhere.
  void request_split(uint64_t bytes) {
    if (bytes == 0) return;
    if (bytes > Rec::kSplitRingBytes) return slots_.request(Rec::kScratchSplitK, bytes);
    if (scheduling_) return scoped_.request(bytes);
    slots_.request(Rec::kScratchSplitRing + split_turn_++ % Rec::kSplitRingSlots, bytes);
  }

  void product(const Product& p) {
    // The weight dequantized for this product, unless the tensor-core kernel reads it packed.
    if (p.weight && o_.quantize != QuantType::none && !ops::quant_in_gemm(dev_.coopmat2, p.weight->in))
      dequantized_.request(0, uint64_t(p.weight->out) * p.weight->in * (dev_.coopmat ? 2 : 4));
    // ops/matmul.cpp cm2_a_as_f16: the workgroup-scope GEMM reads f16; training's f32 A is converted first.
    if (p.weight && in_f16_ && !p.a_f16) slots_.request(Rec::kScratchCm2A, uint64_t(p.M) * p.K * 2);
    const uint64_t split = split_k_bytes(p);
    // vk::Recorder::split_scratch: a weight product's partial sums in a DeferScope take the scope's slots in turn.
    if (deferring_ && !p.lora_own && split) return slots_.request(Rec::kScratchDeferred + deferred_turn_++, split);
    request_split(split);
  }
  // model/layer.cpp's vk::Recorder::DeferScope around these projections (q, k and v's forward; gate's and up's dx
  // where up's goes to d attn): at most kDeferredSlots split products each.
  template <class F>
  void deferring(F&& f) {
    deferring_ = true, deferred_turn_ = 0;
    f();
    deferring_ = false;
  }
  // ops/matmul.cpp dropout_scratch: x̃ in the dtype of the projection's input.
  void dropout_input(const model::LayerSpec& s, LoraTarget t) {
    if (o_.dropout) slots_.request(Rec::kScratchDropout, uint64_t(M_) * s.product(t).in * (input_f16(t) ? 2 : 4));
  }
  // Whether projection t's input is kept in f16 (model/layer_acts.h F16Operands): h1 for q, k and v, the
  // attention's output for o, h2 for gate and up, gated for down.
  bool input_f16(LoraTarget t) const {
    switch (t) {
      case LoraTarget::o_proj: return f16_.attention;
      case LoraTarget::down_proj: return f16_.gated;
      default: return f16_.normed;
    }
  }

  // model/layer.cpp project(): t = x̃·Aᵀ, then y = x·Wᵀ + b + s·t·Bᵀ.
  void project(const model::LayerSpec& s, LoraTarget t) {
    const model::ModuleSpec m = s.product(t);
    if (adapted(s, t)) {
      dropout_input(s, t);
      product({.M = M_, .N = o_.rank, .K = m.in, .lora_own = true, .long_rows = true});
    }
    product({.M = M_, .N = m.out, .K = m.in, .weight = &m, .a_f16 = input_f16(t)});
  }

  // model/layer.cpp project_backward() and ops/matmul.cpp lora_backward().
  void project_backward(const model::LayerSpec& s, LoraTarget t, bool dx) {
    const model::ModuleSpec m = s.product(t);
    const uint32_t r = o_.rank;
    if (!adapted(s, t)) {
      const bool mlp_grad = t == LoraTarget::gate_proj || t == LoraTarget::up_proj;
      if (dx) product({.M = M_, .N = m.in, .K = m.out, .weight = &m, .a_f16 = mlp_grad && f16_.mlp_grads});
      return;
    }
    // dx = dy·W + dt·A as one product (the adapter's term in its epilogue) without dropout, on the shader cores
    // and the cooperative-matrix-2 kernel.
    const bool fused = dx && !o_.dropout && (!dev_.coopmat || dev_.coopmat2);
    product({.M = M_, .N = r, .K = m.out, .lora_own = true, .long_rows = true});  // dt = dy·B
    product({.M = m.out, .N = r, .K = M_, .lora_own = true});                   // dB += dyᵀ·t
    if (fused) product({.M = M_, .N = m.in, .K = m.out, .weight = &m});          // dx = dy·W + dt·A
    dropout_input(s, t);
    product({.M = r, .N = m.in, .K = M_, .lora_own = true});                    // dA += dtᵀ·x̃
    if (!dx || fused) return;
    product({.M = M_, .N = m.in, .K = m.out, .weight = &m});  // dx = dy·W
    if (o_.dropout) slots_.request(Rec::kScratchDropout, uint64_t(M_) * m.in * 4);  // dropoutᵀ's input, as dx: f32
    product({.M = M_, .N = m.in, .K = r, .lora_own = true});  // dx += (mask ⊙) dt·A
  }

  // ops/attention.cpp: which path training's f32 attention takes, and what each asks for.
  enum class Attention { flash, products, rows };
  Attention attention_path(const model::LayerSpec& s) const {
    const uint32_t D = s.head_dim, H = s.heads, B = o_.B, T = o_.T;
    if (s.window && *s.window < T) return Attention::rows;  // ops/attention.cpp: a window that can matter
    const bool flash_shapes = D % 4 == 0 && D <= 128 && dev_.subgroup_size >= 8 && H <= 65535 && B <= 65535;
    if (dev_.coopmat && D % 16 == 0 && T >= 16 && flash_shapes) return Attention::flash;
    const uint64_t scores = uint64_t(B) * H * T * T * 4;
    if (dev_.coopmat && D % 8 == 0 && T >= 16 && uint64_t(B) * H <= 65535 &&
        scores <= std::min<uint64_t>(dev_.max_binding, uint64_t(1) << 30))
      return Attention::products;
    return flash_shapes ? Attention::flash : Attention::rows;
  }
  uint64_t scores_bytes(const model::LayerSpec& s) const { return uint64_t(o_.B) * s.heads * o_.T * o_.T * 4; }
  uint64_t per_head_bytes(const model::LayerSpec& s) const {
    return uint64_t(o_.B) * s.heads * o_.T * s.head_dim * 4;
  }

  void attention_forward(const model::LayerSpec& s) {
    const Attention path = attention_path(s);
    if (path == Attention::products) slots_.request(Rec::kScratchAttention, scores_bytes(s));
    if (path != Attention::flash || !dev_.coopmat) return;
    // ops/attention_flash.cpp: the split forward's partials and their rows' statistics
    const ops::AttentionDims d{.B = o_.B, .T = o_.T, .S = o_.T, .H = s.heads, .KV = s.kv_heads, .D = s.head_dim};
    const uint32_t splits = ops::detail::attention_flash_forward_splits(d, ops::detail::flash_cm2_enabled(dev_.coopmat2));
    if (splits == 1) return;
    slots_.request(Rec::kScratchAttention + 1, ops::detail::flash_forward_split_bytes(d, splits));
    slots_.request(Rec::kScratchAttention + 2, ops::detail::flash_forward_stat_bytes(d, splits));
  }

  void attention_backward(const model::LayerSpec& s) {
    const uint64_t rows = uint64_t(o_.B) * s.heads * o_.T * 4;  // one f32 per query row and head
    switch (attention_path(s)) {
      case Attention::flash: {  // ops/attention_flash.cpp: delta and dq's partials, per-head dk and dv
        const ops::AttentionDims d{.B = o_.B, .T = o_.T, .S = o_.T, .H = s.heads, .KV = s.kv_heads, .D = s.head_dim};
        const uint32_t splits =
            dev_.coopmat ? ops::detail::attention_flash_backward_splits(d, ops::detail::flash_cm2_enabled(dev_.coopmat2)) : 1;
        const uint64_t dq_partials = splits > 1 ? uint64_t(splits) * o_.B * s.heads * o_.T * s.head_dim : 0;
        const bool cm2 = dev_.coopmat && ops::detail::flash_cm2_enabled(dev_.coopmat2);
        slots_.request(Rec::kScratchAttention,
                       (ops::detail::flash_delta_floats(d) + dq_partials) * 4 + ops::detail::flash_do16_bytes(d, cm2));
        if (s.heads != s.kv_heads || splits > 1) {
          slots_.request(Rec::kScratchAttention + 1, ops::detail::flash_per_head_bytes(d, splits));
          slots_.request(Rec::kScratchAttention + 2, ops::detail::flash_per_head_bytes(d, splits));
        }
        return;
      }
      case Attention::products:  // ops/attention_products.cpp: p, ds, and per-head sums
        slots_.request(Rec::kScratchAttention, scores_bytes(s));
        slots_.request(Rec::kScratchAttention + 1, scores_bytes(s));
        slots_.request(Rec::kScratchAttention + 2, per_head_bytes(s));
        return;
      case Attention::rows:  // ops/attention.cpp attention_backward_rows: a delta of its own each time
        attention_rows_ += vk::Memory::footprint(rows);
        return;
    }
  }

  // (model/layer.cpp layer_forward: a recompute without sandwich norms skips an unadapted down product, whose
  // output the backward does not read)
  void layer_forward(const model::LayerSpec& s, bool recomputing = false) {
    deferring([&] {
      for (LoraTarget t : {LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj}) project(s, t);
    });
    attention_forward(s);
    for (LoraTarget t : {LoraTarget::o_proj, LoraTarget::gate_proj, LoraTarget::up_proj}) project(s, t);
    if (!recomputing || s.sandwich_norms || adapted(s, LoraTarget::down_proj)) project(s, LoraTarget::down_proj);
  }

  // model/layer.cpp layer_backward, in a vk::Recorder::ScheduleScope
  void layer_backward(const model::LayerSpec& s, bool input_grad) {
    scoped_.begin();
    scheduling_ = true;
    layer_backward_scheduled(s, input_grad);
    scheduling_ = false;
  }
  void layer_backward_scheduled(const model::LayerSpec& s, bool input_grad) {
    project_backward(s, LoraTarget::down_proj, true);
    auto gate_up = [&] {
      for (LoraTarget t : {LoraTarget::gate_proj, LoraTarget::up_proj}) project_backward(s, t, true);
    };
    // (model/layer.cpp: up's dx to d attn where that is [M, hidden] f32, as it is wherever heads·head_dim = hidden,
    // and neither projection adapted)
    const bool mlp_adapted = adapted(s, LoraTarget::gate_proj) || adapted(s, LoraTarget::up_proj);
    if (uint64_t(s.heads) * s.head_dim == s.hidden && !mlp_adapted) deferring(gate_up);
    else gate_up();
    project_backward(s, LoraTarget::o_proj, true);
    attention_backward(s);
    // model/layer.cpp qkv_backward_fused: where q's, k's and v's weights share an allocation (model/weights.cpp
    // place_qkv: coopmat2, f16 as stored, not quantized) and no dropout, the adapters' gradients, then dq, dk and dv
    // side by side in f16 in the conversion slot, one dx product and each adapter's dx term.
    const LoraTarget qkv[] = {LoraTarget::q_proj, LoraTarget::k_proj, LoraTarget::v_proj};
    if (input_grad && dev_.coopmat2 && o_.quantize == QuantType::none && in_f16_ && !o_.dropout &&
        model::qkv_backward_fuses()) {
      uint32_t n = 0;
      for (LoraTarget t : qkv) {
        n += s.product(t).out;
        project_backward(s, t, false);
      }
      slots_.request(Rec::kScratchCm2A, uint64_t(M_) * n * 2);
      const model::ModuleSpec m{.name = "qkv", .out = n, .in = s.hidden};
      product({.M = M_, .N = m.in, .K = n, .weight = &m, .a_f16 = true});
      bool first = true;  // (the first adapter's term is in the product's epilogue)
      for (LoraTarget t : qkv)
        if (adapted(s, t) && !std::exchange(first, false)) product({.M = M_, .N = m.in, .K = o_.rank, .lora_own = true});
      return;
    }
    for (LoraTarget t : qkv) project_backward(s, t, input_grad);
  }

  // model/training.cpp: logits of a chunk of rows, then d(normed) = dlogits·lm_head, chunk by chunk.
  void head() {
    const uint32_t K = o_.loss_rows && o_.loss_rows < M_ ? o_.loss_rows : M_, V = spec_.vocab, C = spec_.hidden;
    lm_head_ = {.name = "lm_head", .out = V, .in = C};
    for (uint32_t r0 = 0; r0 < K; r0 += o_.logit_chunk) {
      const uint32_t n = std::min(o_.logit_chunk, K - r0);
      head_product({.M = n, .N = V, .K = C, .weight = &lm_head_});
      // dlogits are f16 where the products round to f16 (model::logits_dtype): read as they are.
      head_product({.M = n, .N = C, .K = V, .weight = &lm_head_, .a_f16 = true});
    }
  }
  // The lm_head is never quantized: only its stored dtype decides the tensor-core conversion.
  void head_product(const Product& p) {
    if (model::products_in_f16(dev_.coopmat2, dev_.coopmat, false, o_.weight_dtype) && !p.a_f16)
      slots_.request(Rec::kScratchCm2A, uint64_t(p.M) * p.K * 2);
    request_split(split_k_bytes(p));
  }

  const model::ModelSpec& spec_;
  const PlanDevice& dev_;
  const StepScratchOptions& o_;
  const uint32_t M_;
  const bool in_f16_;  // the projections' products round their operands to f16 (model::products_in_f16)
  const model::F16Operands f16_;
  model::ModuleSpec lm_head_{};
  Slots slots_, dequantized_;
  uint32_t split_turn_ = 0;
  ScopedSplits scoped_;
  bool scheduling_ = false;
  bool deferring_ = false;
  uint32_t deferred_turn_ = 0;
  uint64_t attention_rows_ = 0;
};

}  // namespace

StepScratch step_scratch(const model::ModelSpec& spec, const PlanDevice& device, const StepScratchOptions& options) {
  return StepWalk(spec, device, options).run();
}

}  // namespace ls::train
