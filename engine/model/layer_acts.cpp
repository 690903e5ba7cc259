#include "model/layer_acts.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ops/attention_flash.h"
#include "vk/memory.h"

namespace ls::model {

namespace {

// Where a tensor lives in a set: its own memory, another tensor's of the set (same shape and dtype,
// its life over before this one's begins), or nowhere (the set has no such tensor).
struct Home {
  enum Kind : uint8_t { none, own, shares } kind = none;
  Tensor LayerActs::*other = nullptr;
};
constexpr Home kOwn{Home::own}, kNone{Home::none};
constexpr Home shares(Tensor LayerActs::*other) { return {Home::shares, other}; }

// How long training keeps a tensor.
enum class Keep : uint8_t {
  input,      // the residual entering a layer: one per layer (recomputation starts from it)
  backward,   // the backward reads it: one per layer, or one set for all when recomputing
  transient,  // dead once the next op has read it: one for all layers
};

enum class Dt : uint8_t { f32, act, f16 };

struct ActRow {
  Tensor LayerActs::*field;
  const char* name;
  Shape shape;
  Dt dtype;
  Keep keep;       // in training
  Home inference;  // in the inference set
  Home grad;       // in the backward's gradient set (f32)
};

// Whether a projection in `adapted` adapts `t` (or the fused projection that holds it).
bool adapts(const LayerSpec& spec, std::span<const LoraTarget> adapted, LoraTarget t) {
  const auto f = spec.fused_rows(t);
  return std::find_if(adapted.begin(), adapted.end(), [&](LoraTarget a) { return a == t || (f && a == f->fused); }) !=
         adapted.end();
}

// The MLP's inputs that only an adapter's backward reads (ops::lora_backward's x): h2 for gate_proj and up_proj,
// gated for down_proj. Without such an adapter the backward never reads them, and training keeps them only
// until the next op (0.5B, q_proj and v_proj adapted, B1 x T512: 155 MiB less with f16 operands).
struct MlpInputsRead {
  bool h2 = true, gated = true;
};
MlpInputsRead mlp_inputs_read(const LayerSpec& spec, std::span<const LoraTarget> adapted) {
  return {.h2 = adapts(spec, adapted, LoraTarget::gate_proj) || adapts(spec, adapted, LoraTarget::up_proj),
          .gated = adapts(spec, adapted, LoraTarget::down_proj)};
}

// The plan table. x_out is the next layer's x_in (or, in inference, x_in itself); lora_t and the KV
// cache are placed apart (plan_layer_acts, the caller).
std::vector<ActRow> act_table(const LayerSpec& s, uint32_t B, uint32_t T, F16Operands f16 = {},
                              MlpInputsRead read = {}) {
  using A = LayerActs;
  const uint32_t M = B * T, C = s.hidden, H = s.heads, KV = s.kv_heads, D = s.head_dim, I = s.intermediate;
  const Dt normed = f16.normed ? Dt::f16 : Dt::act, attn = f16.attention ? Dt::f16 : Dt::act;
  std::vector<ActRow> rows = {
      // tensor   name             shape          dtype    training         inference         gradient
      {&A::x_in,  "residual",      {M, C},        Dt::f32, Keep::input,     kOwn,             shares(&A::x_mid)},
      {&A::rstd1, "rstd",          {M},           Dt::f32, Keep::backward,  kOwn,             kNone},
      {&A::h1,    "normed",        {M, C},        normed,  Keep::backward,  kOwn,             kOwn},
      {&A::q,     "q",             {B, T, H, D},  attn,    Keep::backward,  kOwn,             kOwn},
      {&A::k,     "k",             {B, T, KV, D}, attn,    Keep::backward,  kOwn,             kOwn},
      {&A::v,     "v",             {B, T, KV, D}, attn,    Keep::backward,  kOwn,             kOwn},
      {&A::attn,  "attention",     {B, T, H, D},  attn,    Keep::backward,  kOwn,             kOwn},
      {&A::lse,   "lse",           {B, H, T},     Dt::f32, Keep::backward,  kNone,            kNone},
      {&A::o,     "o_proj out",    {M, C},        Dt::f32, Keep::transient, kOwn,             kNone},
      {&A::x_mid, "residual mid",  {M, C},        Dt::f32, Keep::backward,  shares(&A::x_in), kOwn},
      {&A::rstd2, "rstd",          {M},           Dt::f32, Keep::backward,  shares(&A::rstd1), kNone},
      {&A::h2,    "normed",        {M, C},        normed,  read.h2 ? Keep::backward : Keep::transient,
                                                                                  shares(&A::h1),   shares(&A::h1)},
      {&A::gate,  "gate",          {M, I},        f16.gate_up ? Dt::f16 : Dt::act, Keep::backward, kOwn, kOwn},
      {&A::up,    "up",            {M, I},        f16.gate_up ? Dt::f16 : Dt::act, Keep::backward, kOwn, kOwn},
      {&A::gated, "silu*up",       {M, I},        f16.gated ? Dt::f16 : Dt::act,
                                                             read.gated ? Keep::backward : Keep::transient, shares(&A::gate), kOwn},
      {&A::down,  "down_proj out", {M, C},        Dt::f32, Keep::transient, shares(&A::o),    kNone},
  };
  if (s.sandwich_norms) {
    // The norms on o and down read their inputs in the backward, which keeps them; their outputs live only
    // until the residual add. Their gradients: d o, and d down in the same memory.
    auto row = [&](Tensor A::*f) -> ActRow& { return *std::find_if(rows.begin(), rows.end(), [&](const ActRow& r) { return r.field == f; }); };
    row(&A::o).keep = row(&A::down).keep = Keep::backward;
    row(&A::o).grad = kOwn;
    row(&A::down).grad = shares(&A::o);
    rows.insert(rows.end(), {
      {&A::rstd_o,     "rstd o",     {M},    Dt::f32, Keep::backward,  shares(&A::rstd1), kNone},
      {&A::out_normed, "out normed", {M, C}, Dt::f32, Keep::transient, kOwn,              kNone},
      {&A::rstd_down,  "rstd down",  {M},    Dt::f32, Keep::backward,  shares(&A::rstd1), kNone},
    });
  }
  if (s.qk_norm)  // the norms' inputs and statistics, which their backward reads
    rows.insert(rows.begin() + 3, {
      {&A::q_proj, "q proj",       {B, T, H, D},  Dt::act, Keep::backward,  kOwn,             kOwn},
      {&A::k_proj, "k proj",       {B, T, KV, D}, Dt::act, Keep::backward,  kOwn,             kOwn},
      {&A::rstd_q, "rstd q",       {M * H},       Dt::f32, Keep::backward,  kOwn,             kNone},
      {&A::rstd_k, "rstd k",       {M * KV},      Dt::f32, Keep::backward,  kOwn,             kNone},
    });
  return rows;
}

// Whether a layer has a tensor of its own in a training set, or shares the one set for all layers.
bool own_per_layer(Keep keep, ActsPlan plan) {
  return plan != ActsPlan::inference && (keep == Keep::input || (keep == Keep::backward && plan == ActsPlan::training));
}

DType dtype_of(Dt t, DType act) { return t == Dt::act ? act : t == Dt::f16 ? DType::f16 : DType::f32; }

// A gradient's dtype: f32, but d gate and d up in f16 with f16.mlp_grads, and d gated with f16.gate_up.
DType grad_dtype(const ActRow& r, F16Operands f16) {
  const bool f16_grad = (f16.mlp_grads && (r.field == &LayerActs::gate || r.field == &LayerActs::up)) ||
                        (f16.gate_up && r.field == &LayerActs::gated);
  return f16_grad ? DType::f16 : DType::f32;
}

uint64_t bytes_of(const Shape& shape, DType dtype) {
  uint64_t n = dtype_size(dtype);
  for (uint32_t d : shape) n *= d;
  return vk::Memory::footprint(n);
}

// Fills one set by each row's home in it: own tensors first, then the shared ones.
template <class Make>
void fill(LayerActs& set, const std::vector<ActRow>& rows, Home ActRow::*home, const Make& make) {
  for (const ActRow& r : rows)
    if ((r.*home).kind == Home::own) set.*r.field = make(r);
  for (const ActRow& r : rows)
    if ((r.*home).kind == Home::shares) set.*r.field = set.*(r.*home).other;
}

// LORASTUDIO_F16_GATE_UP=0 keeps gate and up in the table's dtype (measurement, session 13).
bool env_is(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v && std::string_view(v) == value;
}
bool env_off(const char* name) { return env_is(name, "0"); }

}  // namespace

bool products_in_f16(bool coopmat2, bool coopmat, bool quantized, DType weight) {
  return coopmat2 && (quantized || weight == DType::f16 || (coopmat && weight == DType::bf16));
}

F16Operands f16_operands(bool products_in_f16, const ModelSpec& model, std::span<const LoraTarget> adapted) {
  // LORASTUDIO_F16_ACTS=1: every f16 operand on any device, f32 products included (the tests' way to run the
  // f16 plumbing on lavapipe, tests/model/training_test.cpp).
  if (!products_in_f16 && !env_is("LORASTUDIO_F16_ACTS", "1")) return {};
  const LayerSpec& spec = model.layers.at(0);
  auto is_adapted = [&](LoraTarget t) { return adapts(spec, adapted, t); };
  F16Operands f16{.gated = !is_adapted(LoraTarget::down_proj),
                  .mlp_grads = !is_adapted(LoraTarget::gate_proj) && !is_adapted(LoraTarget::up_proj)};
  f16.gate_up = f16.gated && f16.mlp_grads && !env_off("LORASTUDIO_F16_GATE_UP");
  const bool acts = !env_off("LORASTUDIO_F16_ACTS");
  f16.normed = acts;
  // ops/attention_flash.h attention_flash_f16_kernels in every layer, for training's shapes (T >= 16 assumed:
  // shorter sequences take the f32 kernels through a conversion, still correct).
  f16.attention = acts && std::all_of(model.layers.begin(), model.layers.end(), [](const LayerSpec& l) {
    return !l.window && ops::detail::attention_flash_f16_kernels(
                            {.T = 16, .S = 16, .H = l.heads, .KV = l.kv_heads, .D = l.head_dim});
  });
  return f16;
}

std::vector<LayerActs> plan_layer_acts(vk::Device& dev, const ModelSpec& spec, const LoraAdapter* adapter,
                                       uint32_t B, uint32_t T, DType act, ActsPlan plan, F16Operands f16) {
  const size_t L = spec.layers.size();
  const LayerSpec& layer0 = spec.layers.at(0);  // every layer has the same shapes
  const std::vector<ActRow> rows =
      act_table(layer0, B, T, f16, mlp_inputs_read(layer0, adapter ? adapter->targets : std::vector<LoraTarget>{}));
  auto make = [&](const ActRow& r) { return Tensor::empty(dev, r.shape, dtype_of(r.dtype, act), r.name); };
  std::vector<LayerActs> acts(L);
  LayerActs shared;  // the tensors that are one for all layers
  // Layer i's tensor t: its own, or `one`, the same for every layer.
  auto place = [&](Tensor& t, Tensor& one, Keep keep, const auto& make_one) {
    t = own_per_layer(keep, plan) ? make_one() : one.defined() ? one : (one = make_one());
  };
  if (plan == ActsPlan::inference) {
    fill(shared, rows, &ActRow::inference, make);
    shared.x_out = shared.x_in;
    acts.assign(L, shared);
  } else {
    for (LayerActs& a : acts)
      for (const ActRow& r : rows) place(a.*r.field, shared.*r.field, r.keep, [&] { return make(r); });
    for (size_t i = 0; i < L; ++i)
      acts[i].x_out = i + 1 < L ? acts[i + 1].x_in : Tensor::empty(dev, {B * T, spec.hidden}, DType::f32, "residual");
  }
  // The adapter's products x̃·Aᵀ, (M, r) f32, kept for the backward.
  if (adapter)
    for (size_t i = 0; i < L; ++i)
      for (size_t t = 0; t < kLoraTargetCount; ++t)
        if (adapter->at(i, LoraTarget(t)).defined())
          place(acts[i].lora_t[t], shared.lora_t[t], Keep::backward,
                [&] { return Tensor::empty(dev, {B * T, adapter->rank}, DType::f32, "lora t"); });
  return acts;
}

ActsBytes layer_acts_bytes(const ModelSpec& spec, std::span<const LoraTarget> adapted, uint32_t rank, uint32_t B,
                           uint32_t T, DType act, ActsPlan plan, F16Operands f16) {
  ActsBytes b{.layers = spec.layers.size()};
  const std::vector<ActRow> rows = act_table(spec.layers.at(0), B, T, f16, mlp_inputs_read(spec.layers.at(0), adapted));
  for (const ActRow& r : rows) {
    const uint64_t bytes = bytes_of(r.shape, dtype_of(r.dtype, act));
    if (plan == ActsPlan::inference)
      b.shared += r.inference.kind == Home::own ? bytes : 0;
    else
      (own_per_layer(r.keep, plan) ? b.per_layer : b.shared) += bytes;
  }
  if (plan != ActsPlan::inference) b.shared += bytes_of({B * T, spec.hidden}, DType::f32);  // the last x_out
  const uint64_t lora_t = bytes_of({B * T, rank}, DType::f32) * adapted.size();
  (own_per_layer(Keep::backward, plan) ? b.per_layer : b.shared) += lora_t;
  return b;
}

uint64_t layer_grads_bytes(const LayerSpec& spec, uint32_t B, uint32_t T, F16Operands f16) {
  uint64_t bytes = 0;
  for (const ActRow& r : act_table(spec, B, T))
    if (r.grad.kind == Home::own) bytes += bytes_of(r.shape, grad_dtype(r, f16));
  return bytes;
}

LayerActs plan_layer_grads(vk::Device& dev, const LayerSpec& spec, uint32_t B, uint32_t T, F16Operands f16) {
  LayerActs d;
  fill(d, act_table(spec, B, T), &ActRow::grad, [&](const ActRow& r) {
    return Tensor::empty(dev, r.shape, grad_dtype(r, f16), ("d " + std::string(r.name)).c_str());
  });
  return d;
}

}  // namespace ls::model
