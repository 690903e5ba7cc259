#pragma once
// A run's metrics as CSV or JSONL, for spreadsheets and scripts.
//
// CSV: the header `step,time,loss,val_loss,lr,grad_norm,tokens_per_s`, then one line per row in the
// order given, "\n" line ends. Numbers as nlohmann::json writes a double: the shortest text that reads
// back to the same value (0.1 → "0.1", 2 → "2.0", 1e-4 → "0.0001", 1e-5 → "1e-05", 3e6 → "3000000.0");
// NaN → "nan", ±infinity → "inf"/"-inf" (Python and pandas read both); an absent val_loss → an empty field.
//
// JSONL: one object per row, keys in the CSV's order, then "gpu_ms": {"group": ms, ...} when the row has
// GPU times. Numbers spelled as in the CSV; an absent val_loss and any non-finite number → null (JSON has
// no NaN).
#include <filesystem>
#include <span>
#include <string>

#include "store/run_store.h"

namespace ls::store {

std::string metrics_csv(std::span<const MetricRow> rows);
std::string metrics_jsonl(std::span<const MetricRow> rows);

// Write the text above with ls::write_file_atomically; throw ls::Error naming `path` on failure.
void write_metrics_csv(const std::filesystem::path& path, std::span<const MetricRow> rows);
void write_metrics_jsonl(const std::filesystem::path& path, std::span<const MetricRow> rows);

}  // namespace ls::store
