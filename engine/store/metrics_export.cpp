#include "store/metrics_export.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

namespace ls::store {
namespace {

// The same spelling as in the JSONL (nlohmann's shortest round trip), with words for what JSON lacks.
void append_number(std::string& out, double v) {
  if (std::isnan(v))
    out += "nan";
  else if (std::isinf(v))
    out += v > 0 ? "inf" : "-inf";
  else
    out += nlohmann::json(v).dump();
}

}  // namespace

std::string metrics_csv(std::span<const MetricRow> rows) {
  std::string out = "step,time,loss,val_loss,lr,grad_norm,tokens_per_s\n";
  for (const MetricRow& m : rows) {
    out += std::to_string(m.step);
    for (const double v : {m.time, m.loss}) {
      out += ',';
      append_number(out, v);
    }
    out += ',';
    if (m.val_loss) append_number(out, *m.val_loss);
    for (const double v : {m.lr, m.grad_norm, m.tokens_per_s}) {
      out += ',';
      append_number(out, v);
    }
    out += '\n';
  }
  return out;
}

std::string metrics_jsonl(std::span<const MetricRow> rows) {
  std::string out;
  for (const MetricRow& m : rows) {
    nlohmann::ordered_json j = {{"step", m.step},
                                {"time", m.time},
                                {"loss", m.loss},
                                {"val_loss", m.val_loss ? nlohmann::ordered_json(*m.val_loss) : nullptr},
                                {"lr", m.lr},
                                {"grad_norm", m.grad_norm},
                                {"tokens_per_s", m.tokens_per_s}};
    if (!m.gpu_ms.empty()) {
      nlohmann::ordered_json gpu = nlohmann::ordered_json::object();
      for (const GpuTime& t : m.gpu_ms) gpu[t.group] = t.ms;
      j["gpu_ms"] = std::move(gpu);
    }
    out += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

void write_metrics_csv(const std::filesystem::path& path, std::span<const MetricRow> rows) {
  write_file_atomically(path, metrics_csv(rows));
}

void write_metrics_jsonl(const std::filesystem::path& path, std::span<const MetricRow> rows) {
  write_file_atomically(path, metrics_jsonl(rows));
}

}  // namespace ls::store
