#include "train/plan_fit.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

#include "error.h"

namespace ls::train {

namespace {

MemoryPlan plan_with(const PlanOptions& o, const std::function<void(PlanOptions&)>& change) {
  PlanOptions changed = o;
  change(changed);
  return memory_plan(changed);
}
uint64_t total_with(const PlanOptions& o, const std::function<void(PlanOptions&)>& change) {
  return plan_with(o, change).total();
}

// The largest value in [lo, hi] whose plan fits (plans grow with it), or nullopt when lo does not fit.
std::optional<uint32_t> largest_fitting(uint32_t lo, uint32_t hi, uint64_t available,
                                        const std::function<uint64_t(uint32_t)>& total_at) {
  if (lo > hi || total_at(lo) > available) return std::nullopt;
  while (lo < hi) {  // lo fits
    const uint32_t mid = lo + (hi - lo + 1) / 2;
    if (total_at(mid) <= available) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The loss's rows when batches get smaller: never more than before, never more than the batch.
uint32_t rows_for(uint32_t rows, uint32_t B, uint32_t T) { return rows ? std::min(rows, B * T) : 0; }

}  // namespace

std::string format_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%u B", unsigned(bytes));
  else if (bytes < (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024);
  else if (bytes < (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
  return buf;
}

std::vector<PlanChange> ways_to_fit(const PlanOptions& o, uint64_t available) {
  // Savings in what the tensors take: the total, rounded up to the allocator's blocks, hides those of a
  // small model.
  const uint64_t now = memory_plan(o).allocated();
  std::vector<PlanChange> changes;
  auto consider = [&](std::string flags, const std::function<void(PlanOptions&)>& change) {
    const MemoryPlan changed = plan_with(o, change);
    if (changed.allocated() < now) changes.push_back({std::move(flags), now - changed.allocated(), changed.total() <= available});
  };
  const RunShape& s = o.shape;
  if (o.quantize != QuantType::nf4) consider("--quantize nf4", [](PlanOptions& p) { p.quantize = QuantType::nf4; });
  if (!o.grad_checkpoint) consider("--grad-checkpoint", [](PlanOptions& p) { p.grad_checkpoint = true; });
  if (s.batch > 1) {
    auto with_batch = [&](uint32_t B) {
      return [&o, B](PlanOptions& p) {
        p.shape.batch = B;
        p.shape.loss_rows = rows_for(o.shape.loss_rows, B, o.shape.seq_len);
        p.shape.validation_loss_rows = rows_for(o.shape.validation_loss_rows, B, o.shape.seq_len);
      };
    };
    const uint32_t B = largest_fitting(1, s.batch - 1, available, [&](uint32_t b) { return total_with(o, with_batch(b)); })
                           .value_or(1);
    consider("--batch-size " + std::to_string(B) + " (with " + std::to_string((s.batch + B - 1) / B) +
                 " times the --grad-accum for the same batch)",
             with_batch(B));
  }
  if (s.seq_len > 64) {
    auto with_len = [&](uint32_t T) {
      return [&o, T](PlanOptions& p) {
        p.shape.seq_len = T;
        p.shape.loss_rows = rows_for(o.shape.loss_rows, o.shape.batch, T);
        p.shape.validation_loss_rows = rows_for(o.shape.validation_loss_rows, o.shape.batch, T);
      };
    };
    const uint32_t steps = (s.seq_len - 1) / 64;  // T = 64·n below the current one
    const uint32_t T = 64 * largest_fitting(1, steps, available, [&](uint32_t n) { return total_with(o, with_len(64 * n)); })
                                .value_or(std::max(1u, s.seq_len / 128));
    consider("--seq-len " + std::to_string(T), with_len(T));
  }
  if (o.rank > 1) consider("--rank " + std::to_string(o.rank / 2), [](PlanOptions& p) { p.rank /= 2; });
  if (s.validation) consider("no validation data", [](PlanOptions& p) { p.shape.validation = false; });
  std::stable_sort(changes.begin(), changes.end(), [](const PlanChange& a, const PlanChange& b) { return a.saves > b.saves; });
  return changes;
}

std::string plan_summary(const MemoryPlan& plan, const vk::MemoryBudget& budget) {
  return "GPU memory: " + format_bytes(plan.total()) + " planned of " + format_bytes(budget.available()) + " available";
}

namespace {

std::string device_line(const vk::MemoryBudget& b, const std::string& device_name) {
  std::string line = device_name + " has " + format_bytes(b.available()) + " available (" + format_bytes(b.heap_bytes) +
                     " device-local";
  if (b.budget_bytes != b.heap_bytes) line += ", budget " + format_bytes(b.budget_bytes);
  if (b.in_use_bytes) line += ", " + format_bytes(b.in_use_bytes) + " in use";
  return line + "; " + b.source + ")";
}

std::string changes_text(const PlanOptions& o, uint64_t available) {
  const std::vector<PlanChange> changes = ways_to_fit(o, available);
  if (changes.empty()) return "nothing among --quantize, --grad-checkpoint, --batch-size, --seq-len and --rank saves enough";
  std::string text;
  bool any_fits = false;
  for (const PlanChange& c : changes) {
    text += (text.empty() ? "" : "; ") + c.flags + " saves " + format_bytes(c.saves) + (c.fits ? " (then it fits)" : "");
    any_fits |= c.fits;
  }
  if (!any_fits) {
    const uint64_t together = total_with(o, [](PlanOptions& p) {
      p.quantize = QuantType::nf4;
      p.grad_checkpoint = true;
      p.shape.loss_rows = rows_for(p.shape.loss_rows, 1, p.shape.seq_len);
      p.shape.validation_loss_rows = rows_for(p.shape.validation_loss_rows, 1, p.shape.seq_len);
      p.shape.batch = 1;
    });
    text += "; none fits alone: --quantize nf4 --grad-checkpoint --batch-size 1 together need " + format_bytes(together) +
            (together <= available ? " (then it fits)" : ", still too much: shorten --seq-len, or take a smaller model or a larger GPU");
  }
  return text;
}

}  // namespace

void require_fit(const PlanOptions& o, const MemoryPlan& plan, const vk::MemoryBudget& budget,
                 const std::string& device_name) {
  if (plan.total() <= budget.available()) return;
  throw Error("not enough GPU memory: this run needs " + format_bytes(plan.total()) + " and " +
              device_line(budget, device_name) + ". To fit it: " + changes_text(o, budget.available()) +
              ". `lorastudio --batch ... --plan` prints the whole plan");
}

std::string format_plan(const PlanOptions& o, const MemoryPlan& plan, const vk::MemoryBudget& budget,
                        const std::string& device_name) {
  std::string targets;
  for (model::LoraTarget t : o.targets) targets += (targets.empty() ? "" : ",") + std::string(model::target_name(t));
  const RunShape& s = o.shape;
  std::string out = "Memory plan: " + o.model.architecture_name + ", " + std::to_string(o.model.num_layers) +
                    " layers, hidden " + std::to_string(o.model.hidden_size) + "; batches of " + std::to_string(s.batch) +
                    " x " + std::to_string(s.seq_len) + " tokens; LoRA r" + std::to_string(o.rank) + " on " + targets;
  if (o.grad_checkpoint) out += "; --grad-checkpoint";
  if (o.quantize != QuantType::none) out += std::string("; --quantize ") + quant_name(o.quantize);
  out += "\n";
  char line[160];
  for (size_t i = 0; i < kPlanParts; ++i) {
    const PlanPart part = PlanPart(i);
    const bool listed = std::any_of(plan.items.begin(), plan.items.end(), [&](const PlanItem& it) { return it.part == part; });
    if (!listed) continue;
    std::snprintf(line, sizeof line, "  %-26s %12s\n", plan_part_name(part), format_bytes(plan.bytes(part)).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-26s %12s\n", "total", format_bytes(plan.total()).c_str());
  out += line;
  if (plan.host_bytes) out += "In system memory, not the GPU's: " + plan.host_what + ", " + format_bytes(plan.host_bytes) + "\n";
  out += "Device: " + device_line(budget, device_name) + "\n";
  if (plan.total() <= budget.available())
    out += "Fits, with " + format_bytes(budget.available() - plan.total()) + " to spare.\n";
  else
    out += "Does not fit. To fit it: " + changes_text(o, budget.available()) + ".\n";
  return out;
}

}  // namespace ls::train
