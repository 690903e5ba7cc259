#pragma once
// The scratch a recorded training step takes (vk::Recorder::scratch: one buffer per slot, grown to each
// larger request, an outgrown one kept alive by the dispatches that used it) and the per-layer buffers the
// attention backward allocates where it takes its row-by-row path. No table sizes these: each op asks
// for its scratch as it records. So this walks the step's requests in the order model/training.cpp and
// model/layer.cpp record them, sized by the rules of the ops that make them (named at each rule), and
// adds up each slot's growth as the recorder does. Exact on the scalar path (lavapipe, checked by
// tests/train/memory_plan_test.cpp); on tensor cores the tiles' split-K rule is approximated by the scalar
// path's, a few MiB at most.
#include <cstdint>
#include <vector>

#include "model/layer_spec.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "train/memory_plan.h"

namespace ls::train {

struct StepScratchOptions {
  uint32_t B = 1, T = 1;
  uint32_t loss_rows = 0;      // K as the step records it (all B·T rows when not fewer)
  uint32_t logit_chunk = 0;    // model::logit_rows_per_chunk(K, V, binding)
  uint32_t rank = 8;
  std::vector<model::LoraTarget> targets;
  bool dropout = false;
  DType weight_dtype = DType::bf16;  // of the projections as stored (what the products read)
  QuantType quantize = QuantType::none;
  bool recompute = false;  // --grad-checkpoint: each layer's forward again before its backward
};

struct StepScratch {
  uint64_t split_k = 0, attention = 0, dropout = 0, conversion = 0, dequantized = 0;
  uint64_t attention_rows = 0;  // not scratch: the row-by-row attention backward's delta, one per layer
  uint64_t total() const { return split_k + attention + dropout + conversion + dequantized + attention_rows; }
};

StepScratch step_scratch(const model::ModelSpec& spec, const PlanDevice& device, const StepScratchOptions& options);

}  // namespace ls::train
