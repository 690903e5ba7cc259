#pragma once
// Whether a memory plan (train/memory_plan.h) fits the device, and what to change when it does not: each
// option that makes the plan smaller, with what it saves for this model and these options, computed by
// planning again with it. Also the plan as the text `lorastudio --batch --plan` prints.
#include <cstdint>
#include <string>
#include <vector>

#include "train/memory_plan.h"
#include "vk/memory_budget.h"

namespace ls::train {

struct PlanChange {
  std::string flags;  // e.g. "--quantize nf4", "--batch-size 1 (with 4 times the --grad-accum for the same batch)"
  uint64_t saves = 0;  // bytes of tensors (MemoryPlan::allocated): the total also rounds to blocks
  bool fits = false;  // the plan with this change alone fits
};

// The changes that save memory, most saving first: --quantize nf4, --grad-checkpoint, a smaller
// --batch-size (the largest that fits, or 1; a larger --grad-accum keeps the batch), a shorter --seq-len
// (the longest that fits, or half), half the --rank, no validation data.
std::vector<PlanChange> ways_to_fit(const PlanOptions& options, uint64_t available);

// Throws ls::Error when the plan's total is over what the device has: how much the run needs, how much the
// device has, and the changes of ways_to_fit with their savings.
void require_fit(const PlanOptions& options, const MemoryPlan& plan, const vk::MemoryBudget& budget,
                 const std::string& device_name);

// "812 B", "3.4 MiB", "15.23 GiB".
std::string format_bytes(uint64_t bytes);
// One line: "GPU memory: 15.23 GiB planned of 79.10 GiB available".
std::string plan_summary(const MemoryPlan& plan, const vk::MemoryBudget& budget);
// The table: the run, a line per part of the plan, the total, the device's memory, and whether it fits
// (with the changes that would make it fit when it does not).
std::string format_plan(const PlanOptions& options, const MemoryPlan& plan, const vk::MemoryBudget& budget,
                        const std::string& device_name);

}  // namespace ls::train
