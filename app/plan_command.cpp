#include "plan_command.h"

#include <cstdio>

#include "error.h"
#include "model/lora_init.h"
#include "train/memory_plan.h"
#include "train/plan_fit.h"
#include "train/run_data.h"
#include "train/run_shape.h"
#include "vk/device.h"

namespace ls::app {

int run_plan(const train::TrainConfig& c, const std::string& device_name) {
  if (c.model.empty()) throw Error("--plan needs --model DIR (and --data FILE.jsonl for the run's own batches)");
  train::TrainConfig checked = c;
  if (checked.data.empty()) checked.data = "-";  // validate() asks for --data, which the plan can do without
  train::validate(checked);
  model::check_targets(model::load_config(c.model), c.targets, (c.model / "config.json").string() + " (--targets)");
  vk::Device device({.select = device_name});
  const train::RunShape shape = c.data.empty() ? train::run_shape_at_most(c) : train::run_shape(c, train::load_run_data(c).data);
  const train::PlanOptions options = train::plan_options(device, c, shape);
  const train::MemoryPlan plan = train::memory_plan(options);
  std::fputs(train::format_plan(options, plan, device.memory_budget(), device.report().name).c_str(), stdout);
  if (c.data.empty())
    std::printf("(without --data: every row %u tokens long, every token a target; the run sizes its batches from "
                "its data, which can only make them smaller)\n",
                shape.seq_len);
  return 0;
}

}  // namespace ls::app
