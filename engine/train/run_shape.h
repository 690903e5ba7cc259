#pragma once
// The shapes a training run records its programs for (train/trainer.cpp): [B, T] batches, T the data's
// longest row rounded up to 64 (at most --seq-len), and the rows of a batch the loss runs over. The
// trainer records from these numbers and memory plans (train/memory_plan.h) are made from them.
#include <cstdint>
#include <span>

#include "train/dataset.h"
#include "train/example.h"
#include "train/trainer.h"

namespace ls::train {

struct RunShape {
  uint32_t batch = 1;                 // B
  uint32_t seq_len = 64;              // T
  uint32_t loss_rows = 0;             // K: the most rows of a batch with a target, a multiple of 16 (0: all B·T)
  bool validation = false;            // a second program computes validation losses
  uint32_t validation_loss_rows = 0;  // its K
};

// The shape train() records for this data set.
RunShape run_shape(const TrainConfig& config, const Dataset& data);
// Without the data: the most a run with these options can record, T = --seq-len and every row a target;
// validation as the options ask for it.
RunShape run_shape_at_most(const TrainConfig& config);

// The most targets a batch of B of these rows can hold (the B rows with the most trained tokens; with
// fewer rows than B, a batch spans epochs and holds a row up to ceil(B / rows) times), rounded up to 16:
// the rows the step's vocabulary projection needs (model::TrainBatch::loss_rows).
uint32_t loss_rows_needed(std::span<const Example> rows, uint32_t B);

}  // namespace ls::train
