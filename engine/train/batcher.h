#pragma once
// Fixed-shape batches [B, T] for a recorded training step, from a data set's rows (train/dataset.h).
//
// The rows of all epochs form one stream: epoch e visits every row once, in a seeded order
// (permutation(rows, derive_seed(seed, e)), train/shuffle.h) or in dataset order without shuffle.
// A batch takes the next B rows of the stream, so a batch may hold the end of one epoch and the start
// of the next; only the very last batch of the run may have fewer than B rows of data, the rest
// being padding rows with no target. Each row starts at position 0 and is padded to T.
//
// targets[b, t] = ids[b, t+1] when row b has a token at t+1 and that token is trained, else
// kIgnoreIndex (padding, masked tokens, and the last position t = T-1 have no target). The loss of a
// batch is the mean over its trained_tokens targets.
//
// The position in the stream is a BatcherState; a Batcher restored from one gives exactly the batches
// the saved one would have given next.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "train/dataset.h"
#include "train/example.h"

namespace ls::train {

inline constexpr int32_t kIgnoreIndex = -100;  // as PyTorch's cross_entropy ignore_index

struct Batch {
  uint32_t B = 0, T = 0;
  std::vector<int32_t> ids;      // [B, T]: token ids, pad_id after each row's end
  std::vector<int32_t> targets;  // [B, T]: the next id where it is trained, else kIgnoreIndex
  uint32_t trained_tokens = 0;   // targets that are not kIgnoreIndex
  uint32_t rows = 0;             // rows with data; B except maybe in the last batch of a run
};

struct BatcherOptions {
  uint32_t batch_size = 4;   // B (mlx-lm's default)
  uint32_t seq_len = 2048;   // T; every row must fit (see fixed_seq_len)
  int32_t pad_id = 0;        // see pad_token
  bool shuffle = true;
  uint64_t seed = 0;
  uint32_t epochs = 1;
};

// The batcher's options for training on a data set loaded with `options` (its shuffle, seed, epochs).
BatcherOptions training_batches(const DatasetOptions& options, uint32_t batch_size, uint32_t seq_len, int32_t pad_id);
// One pass in order, for validation.
BatcherOptions evaluation_batches(uint32_t batch_size, uint32_t seq_len, int32_t pad_id);

// The tokenizer's pad token, else its EOS, else 0 (padding is never a target, so any id serves).
int32_t pad_token(const tok::Tokenizer& tokenizer);

// T for rows of at most max_seq_len tokens: the longest row rounded up to a multiple of 64, at most
// max_seq_len. A smaller fixed T makes a smaller step program when the data is short.
uint32_t fixed_seq_len(std::span<const Example> rows, uint32_t max_seq_len);
// The same for rows whose longest has `longest` tokens (the Train panel's memory line knows only that).
uint32_t seq_len_for(size_t longest, uint32_t max_seq_len);

// Where a batcher is in its stream. Saved with a checkpoint; seed, shuffle and rows must match on restore.
struct BatcherState {
  uint64_t seed = 0;
  bool shuffle = true;
  uint64_t rows = 0;      // rows in the data set
  uint64_t epoch = 0;     // the epoch of the next row (== epochs when the run is done)
  uint64_t position = 0;  // the next row's index in that epoch's order

  std::string to_json() const;  // {"seed":..,"shuffle":..,"rows":..,"epoch":..,"position":..}
  // Throws ls::Error naming `source` and the missing or malformed key.
  static BatcherState from_json(std::string_view text, const std::string& source);
  bool operator==(const BatcherState&) const = default;
};

class Batcher {
 public:
  // `rows` must outlive the batcher. Throws ls::Error for empty rows, B < 1, T < 2, epochs < 1 or a
  // row longer than T (naming its line).
  Batcher(std::span<const Example> rows, const BatcherOptions& options);

  // The next batch; false (batch untouched) when every epoch is done. Reuses the batch's buffers.
  bool next(Batch& batch);
  std::optional<Batch> next();

  BatcherState state() const;
  // Continues from a saved state. Throws ls::Error when it does not belong to this data set and
  // options (seed, shuffle, row count) or lies past the end of the run.
  void restore(const BatcherState& state);

  uint64_t total_batches() const;  // ceil(epochs * rows / B)
  uint64_t batches_done() const;   // batches given so far (from the state, also after restore)
  const BatcherOptions& options() const { return options_; }

 private:
  void start_epoch(uint64_t epoch);

  std::span<const Example> rows_;
  BatcherOptions options_;
  uint64_t epoch_ = 0, position_ = 0;
  std::vector<uint32_t> order_;  // epoch_'s order
};

}  // namespace ls::train
