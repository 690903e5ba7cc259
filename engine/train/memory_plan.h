#pragma once
// How much device memory a training run will take, by category, before it starts (issues 21 and 23): read
// off the tables the code allocates from (the weights' tensor table, the activation plan, the loss's
// buffers, the adapter's shapes), each tensor rounded as the allocator rounds it; the recorder's scratch
// from the same rules the ops size it by (train/step_scratch.h). tests/train/memory_plan_test.cpp holds
// the plan against the allocator's measured peak of a real run.
//
// Sizes: B batch, T sequence length, M = B·T, K loss rows, L layers, r LoRA rank.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/config.h"
#include "model/lora.h"
#include "tensor/quant.h"
#include "train/run_shape.h"
#include "vk/device.h"

namespace ls::train {

// What a plan needs to know of the device: which paths the kernels take, and the binding limit.
struct PlanDevice {
  bool coopmat = false, coopmat2 = false;
  uint32_t subgroup_size = 32;
  uint64_t max_binding = uint64_t(1) << 32;  // maxStorageBufferRange
  bool host_apart = false;  // system memory apart from the device's (vk::Memory::host_apart)
  static PlanDevice of(const vk::Device& device);
};

// What a plan is made for: the model, its weights' dtypes as loaded, the device, the batches and the
// adapter. kv_cache_tokens > 0 adds a KV cache of that many tokens (f32) for generating afterwards.
struct PlanOptions {
  model::ModelConfig model;
  std::function<DType(const model::ExpectedTensor&)> weight_dtype;  // the file's dtype of each tensor
  PlanDevice device;
  RunShape shape;
  std::vector<model::LoraTarget> targets = {model::LoraTarget::q_proj, model::LoraTarget::v_proj};
  uint32_t rank = 8;
  float dropout = 0;
  bool grad_checkpoint = false;
  QuantType quantize = QuantType::none;
  uint32_t kv_cache_tokens = 0;
};

enum class PlanPart : uint8_t {
  weights,      // the base model as stored on this device (quantized projections with --quantize)
  lora,         // the adapter, its gradients and AdamW's two moments, f32
  activations,  // what the backward reads (per layer, or one layer's with --grad-checkpoint), their gradients
  loss,         // the final norm, the logit chunk and the loss's rows
  scratch,      // the recorded programs' scratch buffers (split-K sums, attention, dropout, conversions)
  validation,   // the validation program: its own activations, loss buffers, scratch and gradients
  kv_cache,     // generation's KV cache (only with kv_cache_tokens)
  blocks,       // the allocator takes device memory in blocks (vk::Memory::kBlockSize): the total rounded up to them
};
constexpr size_t kPlanParts = 8;
const char* plan_part_name(PlanPart part);  // "base weights", "LoRA + gradients + AdamW", ...

struct PlanItem {
  PlanPart part;
  std::string what;  // e.g. "kept per layer (0.12 GiB × 28 layers)"
  uint64_t bytes = 0;
};

struct MemoryPlan {
  std::vector<PlanItem> items;
  // What the run keeps in system memory instead (model::embedding_in_host_memory): in no total.
  uint64_t host_bytes = 0;
  std::string host_what;
  uint64_t total() const;                 // every item, blocks included
  uint64_t bytes(PlanPart part) const;    // the items of one part
  uint64_t allocated() const { return total() - bytes(PlanPart::blocks); }  // what the tensors take
};

MemoryPlan memory_plan(const PlanOptions& options);

// The options of training `config` with batches shaped `shape` on `device`: the model's config.json and its
// weights' dtypes (the safetensors headers) read from config.model. Throws ls::Error naming a file it
// cannot read.
PlanOptions plan_options(const vk::Device& device, const TrainConfig& config, const RunShape& shape);

}  // namespace ls::train
