#pragma once
// The Train panel's memory line: the memory plan (train/memory_plan.h) of a run with the options as they
// are now, against the device's memory, recomputed every frame (a plan is arithmetic over the model's
// tables); hovered, the plan's table, and what to change when it does not fit.
#include <optional>

#include "train/memory_plan.h"
#include "ui/views.h"

namespace ls::ui {

// The plan's options for the Train panel's settings, or nullopt without a model or a target. The batches
// are the most the options allow: T from the loaded data's longest example (all of --seq-len when packing
// or without data), every token a target; the run plans its own, never larger.
std::optional<train::PlanOptions> panel_plan_options(const ModelView& model, const DataView& data,
                                                     const TrainSettings& settings, const MemoryView& memory);

void draw_memory_plan(const ModelView& model, const DataView& data, const TrainSettings& settings,
                      const MemoryView& memory);

}  // namespace ls::ui
