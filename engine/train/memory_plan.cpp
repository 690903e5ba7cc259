#include "train/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "error.h"
#include "model/forward.h"
#include "model/layer_acts.h"
#include "model/safetensors.h"
#include "model/training.h"
#include "model/weights.h"
#include "train/step_scratch.h"
#include "vk/memory.h"

namespace ls::train {

namespace {

using model::LoraTarget;

uint64_t fp(uint64_t bytes) { return vk::Memory::footprint(bytes); }

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
  return buf;
}

// One set of LoRA matrices shaped like the adapter (model/lora_init.cpp: A [r, in], B [out, r], f32, every
// layer), as the adapter, its gradients and each AdamW moment take it.
uint64_t lora_set_bytes(const model::ModelSpec& spec, const PlanOptions& o) {
  uint64_t bytes = 0;
  for (const model::LayerSpec& layer : spec.layers)
    for (LoraTarget t : o.targets) {
      const model::ModuleSpec& m = layer.projection(t);
      bytes += fp(uint64_t(o.rank) * m.in * 4) + fp(uint64_t(m.out) * o.rank * 4);
    }
  return bytes;
}

// ops/optimizer.cpp grad_sumsq: a row of 64 f32 partial sums per 64 workgroups of each dispatch of up to 7
// matrices (train/optimizer_update.cpp lora_matrices' order), a workgroup per 4096 elements (at most 1024
// a matrix); and the sum itself.
uint64_t optimizer_bytes(const model::ModelSpec& spec, const PlanOptions& o) {
  std::vector<uint64_t> sizes;
  for (const model::LayerSpec& layer : spec.layers)
    for (size_t t = 0; t < model::kLoraTargetCount; ++t)
      if (std::find(o.targets.begin(), o.targets.end(), LoraTarget(t)) != o.targets.end()) {
        const model::ModuleSpec& m = layer.projection(LoraTarget(t));
        sizes.push_back(uint64_t(o.rank) * m.in), sizes.push_back(uint64_t(m.out) * o.rank);
      }
  uint64_t rows = 0;
  for (size_t first = 0; first < sizes.size(); first += 7) {
    uint64_t groups = 0;
    for (size_t k = first; k < std::min(sizes.size(), first + 7); ++k) groups += std::min<uint64_t>((sizes[k] + 4095) / 4096, 1024);
    rows += (groups + 63) / 64;
  }
  return fp(rows * 64 * 4) + fp(4);
}

// One recorded forward+backward program (train/trainer.cpp record_step, model/training.cpp): what it
// allocates for a batch whose loss runs over `loss_rows` rows.
struct StepBytes {
  model::ActsBytes kept;
  uint64_t grads = 0, lora_backward = 0, inputs = 0, loss = 0;
  StepScratch scratch;
  uint64_t total() const { return kept.total() + grads + lora_backward + inputs + loss + scratch.total(); }
};

StepBytes step_bytes(const model::ModelSpec& spec, const PlanOptions& o, uint32_t loss_rows, bool dropout,
                     DType weight_dtype) {
  const uint32_t B = o.shape.batch, T = o.shape.seq_len, M = B * T, V = spec.vocab;
  const uint32_t K = loss_rows && loss_rows < M ? loss_rows : M;
  StepBytes s;
  // model/training.cpp: the MLP operands kept in f16 where the products round to f16.
  const bool in_f16 =
      model::products_in_f16(o.device.coopmat2, o.device.coopmat, o.quantize != QuantType::none, weight_dtype);
  const model::F16Operands f16 = model::f16_operands(in_f16, spec, o.targets);
  s.kept = model::layer_acts_bytes(spec, o.targets, o.rank, B, T, DType::f32,
                                   o.grad_checkpoint ? model::ActsPlan::recompute : model::ActsPlan::training, f16);
  s.grads = model::layer_grads_bytes(spec.layers.at(0), B, T, f16);
  // model/layer.cpp project_backward: each adapted projection's dt, (M, r) f32, a tensor of its own (a fused
  // projection's: one for each part, which the layer computes apart).
  uint64_t adapted_products = 0;
  for (LoraTarget t : o.targets) adapted_products += std::max<size_t>(1, spec.layers.at(0).projection(t).parts.size());
  s.lora_backward = spec.layers.size() * adapted_products * fp(uint64_t(M) * o.rank * 4);
  s.inputs = fp(uint64_t(M) * 4);  // positions; ids, targets and the loss rows are host-visible
  const DType logits = model::logits_dtype(o.device.coopmat2, o.device.coopmat, weight_dtype);
  const uint32_t logit_chunk = model::logit_rows_per_chunk(K, V, o.device.max_binding, uint32_t(dtype_size(logits)));
  s.loss = model::loss_buffers_bytes(B, T, K, spec.hidden, V, o.device.max_binding, logits);
  s.scratch = step_scratch(spec, o.device,
                           {.B = B, .T = T, .loss_rows = K, .logit_chunk = logit_chunk,
                            .rank = o.rank, .targets = o.targets, .dropout = dropout, .weight_dtype = weight_dtype,
                            .quantize = o.quantize, .recompute = o.grad_checkpoint});
  return s;
}

void add_weights(MemoryPlan& p, const model::ModelSpec& spec, const PlanOptions& o) {
  uint64_t projections = 0, embed = 0, head = 0, rest = fp(spec.inv_freq.size() * 4);
  if (!spec.inv_freq_long.empty()) rest += fp(spec.inv_freq_long.size() * 4);  // longrope's second table
  if (!spec.inv_freq_local.empty()) rest += fp(spec.inv_freq_local.size() * 4);  // Gemma 3's sliding layers'
  if (o.quantize == QuantType::nf4) rest += fp(dynamic_map_8bit().size() * 4);  // the absmax map, shared
  // Named as the folder names them (a Gemma3ForConditionalGeneration folder's language model included).
  for (const model::ExpectedTensor& e : model::expected_tensors(spec, o.model.weight_prefix, o.model.lm_head_name)) {
    // A quantized layer's biases are kept in its products' dtype (ops::dequantized_dtype).
    // Gemma 3's norms are kept as 1 + w in f32 (model/weights.h).
    const bool quantized_layer = o.quantize != QuantType::none;
    const bool offset_norm = spec.final_norm.style == model::NormStyle::one_plus_weight &&
                             (e.role == model::TensorRole::layer_norm || e.role == model::TensorRole::final_norm);
    const uint32_t size = quantized_layer && e.role == model::TensorRole::bias ? (o.device.coopmat ? 2u : 4u)
                          : offset_norm                                        ? 4u
                                                                               : uint32_t(dtype_size(o.weight_dtype(e)));
    // A fused projection is kept as its parts (model/weights.cpp upload_weights): each its own tensor.
    std::vector<uint64_t> pieces = {e.numel()};
    if (e.role == model::TensorRole::weight || e.role == model::TensorRole::bias) {
      const model::ModuleSpec& m = spec.layers.at(e.layer).projection(e.target);
      if (!m.parts.empty()) pieces.clear();
      for (const model::FusedPart& part : m.parts) pieces.push_back(e.numel() / m.out * part.rows);
    }
    uint64_t bytes = 0;
    for (uint64_t n : pieces) {
      const QuantSections q = quantized_sections(o.quantize, n);
      bytes += quantized_layer && e.role == model::TensorRole::weight
                   ? fp(q.codes) + fp(q.absmax) + (q.scales ? fp(q.scales) : 0)
                   : fp(n * size);
    }
    switch (e.role) {
      case model::TensorRole::weight: projections += bytes; break;
      case model::TensorRole::embed: embed += bytes; break;
      case model::TensorRole::lm_head: head += bytes; break;
      default: rest += bytes;
    }
  }
  const std::string q = o.quantize == QuantType::none ? "" : std::string(", ") + quant_name(o.quantize);
  p.items.push_back({PlanPart::weights, "layer projections" + q, projections});
  if (model::embedding_in_host_memory(o.device.host_apart, spec.tied)) {
    p.host_bytes += embed;
    p.host_what = "embedding table (the GPU reads the batch's rows over the bus)";
  } else {
    p.items.push_back({PlanPart::weights, spec.tied ? "embedding (also the lm_head)" : "embedding", embed});
  }
  if (!spec.tied) p.items.push_back({PlanPart::weights, "lm_head", head});
  p.items.push_back({PlanPart::weights, "norms, biases, RoPE", rest});
}

void add_step(MemoryPlan& p, const StepBytes& s, bool recompute) {
  const PlanPart part = PlanPart::activations;
  const std::string L = std::to_string(s.kept.layers);
  p.items.push_back({part, (recompute ? "layer inputs (" : "kept per layer (") + gib(s.kept.per_layer) + " x " + L + ")",
                     s.kept.per_layer * s.kept.layers});
  p.items.push_back({part, "one set for all layers", s.kept.shared + s.inputs});
  p.items.push_back({part, "their gradients (one layer's)", s.grads});
  p.items.push_back({part, "LoRA backward", s.lora_backward});
  if (s.scratch.attention_rows) p.items.push_back({part, "attention backward (row by row)", s.scratch.attention_rows});
  p.items.push_back({PlanPart::loss, "final norm, logit chunk, loss rows", s.loss});
  p.items.push_back({PlanPart::scratch, "split-K partial sums", s.scratch.split_k});
  p.items.push_back({PlanPart::scratch, "attention", s.scratch.attention});
  if (s.scratch.dropout) p.items.push_back({PlanPart::scratch, "LoRA dropout", s.scratch.dropout});
  if (s.scratch.conversion) p.items.push_back({PlanPart::scratch, "f32 operands as f16 (tensor cores)", s.scratch.conversion});
  if (s.scratch.dequantized) p.items.push_back({PlanPart::scratch, "dequantized weight", s.scratch.dequantized});
}

}  // namespace

PlanDevice PlanDevice::of(const vk::Device& d) {
  return {.coopmat = d.coopmat(), .coopmat2 = d.coopmat2(), .subgroup_size = d.report().subgroup_size,
          .max_binding = d.report().max_storage_range, .host_apart = d.memory().host_apart()};
}

const char* plan_part_name(PlanPart part) {
  switch (part) {
    case PlanPart::weights: return "base weights";
    case PlanPart::lora: return "LoRA + gradients + AdamW";
    case PlanPart::activations: return "activations";
    case PlanPart::loss: return "loss (logit chunks)";
    case PlanPart::scratch: return "scratch";
    case PlanPart::validation: return "validation program";
    case PlanPart::kv_cache: return "KV cache";
    case PlanPart::blocks: return "allocator blocks";
  }
  return "?";
}

uint64_t MemoryPlan::total() const {
  uint64_t t = 0;
  for (const PlanItem& i : items) t += i.bytes;
  return t;
}

uint64_t MemoryPlan::bytes(PlanPart part) const {
  uint64_t t = 0;
  for (const PlanItem& i : items) t += i.part == part ? i.bytes : 0;
  return t;
}

MemoryPlan memory_plan(const PlanOptions& o) {
  if (!o.weight_dtype) throw Error("memory_plan: no weight dtypes");
  if (o.rank == 0 || o.targets.empty() || o.shape.batch == 0 || o.shape.seq_len == 0)
    throw Error("memory_plan: rank, targets, batch size and sequence length must not be 0");
  const model::ModelSpec spec = model::model_spec(o.model);
  const model::ExpectedTensor probe{.name = o.model.weight_prefix + "layers.0." +
                                            std::string(spec.layers.at(0).product(LoraTarget::q_proj).name) + ".weight",
                                    .role = model::TensorRole::weight};
  const DType weight_dtype = o.weight_dtype(probe);
  MemoryPlan p;
  add_weights(p, spec, o);

  const uint64_t lora = lora_set_bytes(spec, o);
  p.items.push_back({PlanPart::lora, "adapter A, B (f32)", lora});
  p.items.push_back({PlanPart::lora, "gradients", lora});
  p.items.push_back({PlanPart::lora, "AdamW moments (2)", 2 * lora});

  const StepBytes step = step_bytes(spec, o, o.shape.loss_rows, o.dropout > 0, weight_dtype);
  add_step(p, step, o.grad_checkpoint);
  // Every recorded program binds a 256-byte dummy (vk/recorder.cpp): the step, zeroing, the update.
  p.items.push_back({PlanPart::scratch, "optimizer sums, recorders", optimizer_bytes(spec, o) + 3 * fp(256)});
  if (o.shape.validation) {
    // Its own program (no dropout) and gradients it writes and never reads (train/trainer.cpp).
    const StepBytes eval = step_bytes(spec, o, o.shape.validation_loss_rows, false, weight_dtype);
    p.items.push_back({PlanPart::validation, "activations, loss and scratch", eval.total()});
    p.items.push_back({PlanPart::validation, "its gradients, its recorder", lora + fp(256)});
  }
  if (o.kv_cache_tokens)
    p.items.push_back({PlanPart::kv_cache, std::to_string(o.kv_cache_tokens) + " tokens, f32",
                       model::KvCache::bytes(o.model, o.kv_cache_tokens, DType::f32)});
  const uint64_t allocated = p.total(), block = vk::Memory::kBlockSize;
  p.items.push_back({PlanPart::blocks, "rounded up to " + std::to_string(block >> 20) + " MiB blocks",
                     (allocated + block - 1) / block * block - allocated});
  return p;
}

PlanOptions plan_options(const vk::Device& device, const TrainConfig& c, const RunShape& shape) {
  const model::SafeTensors files = model::SafeTensors::open(c.model);
  std::map<std::string, DType, std::less<>> dtypes;
  for (const model::TensorInfo& t : files.tensors()) dtypes.emplace(t.name, t.dtype);
  model::ModelConfig config = model::load_config(c.model);
  model::resolve_weight_names(config, [&](const std::string& name) { return dtypes.contains(name); });
  return {.model = std::move(config),
          .weight_dtype = [dtypes = std::move(dtypes), path = c.model](const model::ExpectedTensor& e) {
            const auto it = dtypes.find(e.name);
            if (it == dtypes.end()) throw Error(path.string() + ": no tensor " + e.name);
            return it->second;
          },
          .device = PlanDevice::of(device),
          .shape = shape,
          .targets = c.targets,
          .rank = c.rank,
          .dropout = c.dropout,
          .grad_checkpoint = c.grad_checkpoint,
          .quantize = c.quantize};
}

}  // namespace ls::train
