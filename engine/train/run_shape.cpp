#include "train/run_shape.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "train/batcher.h"

namespace ls::train {

uint32_t loss_rows_needed(std::span<const Example> rows, uint32_t B) {
  std::vector<size_t> counts;
  const size_t repeats = rows.empty() ? 1 : (B + rows.size() - 1) / rows.size();
  for (const auto& r : rows) counts.insert(counts.end(), repeats, train::trained_count(r));
  const size_t n = std::min<size_t>(B, counts.size());
  std::partial_sort(counts.begin(), counts.begin() + n, counts.end(), std::greater<>());
  size_t most = 0;
  for (size_t i = 0; i < n; ++i) most += counts[i];
  return uint32_t(std::min<size_t>((std::max<size_t>(most, 1) + 15) / 16 * 16, UINT32_MAX));
}

RunShape run_shape(const TrainConfig& c, const Dataset& data) {
  RunShape s{.batch = c.batch_size, .seq_len = fixed_seq_len(data.train, c.data_options.max_seq_len)};
  s.loss_rows = loss_rows_needed(data.train, s.batch);
  s.validation = !data.validation.empty();
  if (s.validation) s.validation_loss_rows = loss_rows_needed(data.validation, s.batch);
  return s;
}

RunShape run_shape_at_most(const TrainConfig& c) {
  const DatasetOptions& d = c.data_options;
  return {.batch = c.batch_size,
          .seq_len = d.max_seq_len,
          .loss_rows = 0,
          .validation = !d.validation_file.empty() || d.validation_fraction > 0,
          .validation_loss_rows = 0};
}

}  // namespace ls::train
