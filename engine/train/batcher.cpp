#include "train/batcher.h"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "error.h"
#include "train/shuffle.h"

namespace ls::train {

BatcherOptions training_batches(const DatasetOptions& o, uint32_t batch_size, uint32_t seq_len, int32_t pad_id) {
  return {.batch_size = batch_size, .seq_len = seq_len, .pad_id = pad_id, .shuffle = o.shuffle, .seed = o.seed, .epochs = o.epochs};
}

BatcherOptions evaluation_batches(uint32_t batch_size, uint32_t seq_len, int32_t pad_id) {
  return {.batch_size = batch_size, .seq_len = seq_len, .pad_id = pad_id, .shuffle = false, .seed = 0, .epochs = 1};
}

int32_t pad_token(const tok::Tokenizer& tokenizer) {
  if (auto pad = tokenizer.pad_id()) return *pad;
  if (auto eos = tokenizer.eos_id()) return *eos;
  return 0;
}

uint32_t fixed_seq_len(std::span<const Example> rows, uint32_t max_seq_len) {
  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.ids.size());
  return seq_len_for(longest, max_seq_len);
}

uint32_t seq_len_for(size_t longest, uint32_t max_seq_len) {
  const size_t rounded = (longest + 63) / 64 * 64;
  return uint32_t(std::min<size_t>(std::max<size_t>(rounded, 64), max_seq_len));
}

Batcher::Batcher(std::span<const Example> rows, const BatcherOptions& o) : rows_(rows), options_(o) {
  if (rows.empty()) throw Error("batcher: the data set has no rows");
  if (rows.size() > UINT32_MAX) throw Error("batcher: more than 2^32 rows");
  if (o.batch_size < 1) throw Error("batcher: batch_size must be at least 1");
  if (o.seq_len < 2) throw Error("batcher: seq_len must be at least 2, got " + std::to_string(o.seq_len));
  if (o.epochs < 1) throw Error("batcher: epochs must be at least 1");
  for (const auto& r : rows) {
    if (r.ids.size() > o.seq_len)
      throw Error("batcher: the row of line " + std::to_string(r.line) + " has " + std::to_string(r.ids.size()) +
                  " tokens, more than seq_len " + std::to_string(o.seq_len));
    if (r.trained.size() != r.ids.size())
      throw Error("batcher: the row of line " + std::to_string(r.line) + " has " + std::to_string(r.ids.size()) +
                  " ids but " + std::to_string(r.trained.size()) + " mask entries");
  }
  start_epoch(0);
}

void Batcher::start_epoch(uint64_t epoch) {
  epoch_ = epoch;
  position_ = 0;
  if (options_.shuffle) {
    order_ = permutation(uint32_t(rows_.size()), derive_seed(options_.seed, epoch));
  } else {
    order_.resize(rows_.size());
    std::iota(order_.begin(), order_.end(), 0u);
  }
}

bool Batcher::next(Batch& b) {
  if (epoch_ >= options_.epochs) return false;
  const uint32_t B = options_.batch_size, T = options_.seq_len;
  b.B = B;
  b.T = T;
  b.ids.assign(size_t(B) * T, options_.pad_id);
  b.targets.assign(size_t(B) * T, kIgnoreIndex);
  b.trained_tokens = 0;
  b.rows = 0;
  for (uint32_t row = 0; row < B && epoch_ < options_.epochs; ++row) {
    const Example& e = rows_[order_[position_]];
    int32_t* ids = b.ids.data() + size_t(row) * T;
    int32_t* targets = b.targets.data() + size_t(row) * T;
    std::copy(e.ids.begin(), e.ids.end(), ids);
    for (size_t t = 0; t + 1 < e.ids.size(); ++t)
      if (e.trained[t + 1]) {
        targets[t] = e.ids[t + 1];
        ++b.trained_tokens;
      }
    ++b.rows;
    if (++position_ == rows_.size()) start_epoch(epoch_ + 1);
  }
  return true;
}

std::optional<Batch> Batcher::next() {
  Batch b;
  if (!next(b)) return std::nullopt;
  return b;
}

BatcherState Batcher::state() const {
  return {.seed = options_.seed, .shuffle = options_.shuffle, .rows = rows_.size(), .epoch = epoch_, .position = position_};
}

void Batcher::restore(const BatcherState& s) {
  if (s.seed != options_.seed || s.shuffle != options_.shuffle || s.rows != rows_.size())
    throw Error("batcher: the saved state (seed " + std::to_string(s.seed) + ", shuffle " + (s.shuffle ? "on" : "off") +
                ", " + std::to_string(s.rows) + " rows) is not of this data set (seed " + std::to_string(options_.seed) +
                ", shuffle " + (options_.shuffle ? "on" : "off") + ", " + std::to_string(rows_.size()) + " rows)");
  const bool done = s.epoch == options_.epochs && s.position == 0;
  if (!done && (s.epoch >= options_.epochs || s.position >= rows_.size()))
    throw Error("batcher: the saved state (epoch " + std::to_string(s.epoch) + ", position " + std::to_string(s.position) +
                ") lies past the end of the run (" + std::to_string(options_.epochs) + " epochs of " +
                std::to_string(rows_.size()) + " rows)");
  start_epoch(s.epoch);
  position_ = s.position;
}

uint64_t Batcher::total_batches() const {
  return (uint64_t(options_.epochs) * rows_.size() + options_.batch_size - 1) / options_.batch_size;
}

uint64_t Batcher::batches_done() const {
  return (epoch_ * rows_.size() + position_ + options_.batch_size - 1) / options_.batch_size;
}

std::string BatcherState::to_json() const {
  return nlohmann::json{{"seed", seed}, {"shuffle", shuffle}, {"rows", rows}, {"epoch", epoch}, {"position", position}}.dump();
}

BatcherState BatcherState::from_json(std::string_view text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": batcher state: not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(source + ": batcher state: expected a JSON object");
  auto number = [&](const char* key) {
    if (!j.contains(key)) throw Error(source + ": batcher state: missing \"" + key + "\"");
    if (!j[key].is_number_unsigned()) throw Error(source + ": batcher state: \"" + key + "\" must be a non-negative integer");
    return j[key].get<uint64_t>();
  };
  BatcherState s;
  s.seed = number("seed");
  s.rows = number("rows");
  s.epoch = number("epoch");
  s.position = number("position");
  if (!j.contains("shuffle") || !j["shuffle"].is_boolean())
    throw Error(source + ": batcher state: \"shuffle\" must be true or false");
  s.shuffle = j["shuffle"].get<bool>();
  return s;
}

}  // namespace ls::train
