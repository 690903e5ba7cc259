#pragma once
// A training data set: JSONL files (train/jsonl.h) tokenized into examples with loss masks
// (train/example.h), cut to max_seq_len, split into training and validation, optionally packed.
// Batches for the training step come from train/batcher.h.
//
// Order of work, all deterministic for a seed:
//   1. read and encode every line of the training file (the first bad line throws, or with
//      skip_bad_lines all are listed in warnings; a file with no usable line throws either way);
//   2. cut examples longer than max_seq_len at the end (counted in a warning); an example left with
//      no trained token is a bad line;
//   3. validation: the examples of validation_file, or else validation_fraction of the training
//      examples, chosen by a seeded permutation before any shuffling; both sets stay in file order;
//   4. pack (optional): examples are appended whole to a row while it stays within max_seq_len, then a
//      new row starts (an example is never split). A row is attended as one sequence: no mask between
//      its examples, and positions continue across them (0..len-1), so an example sees the ones
//      before it in its row (the usual cost of simple packing, as in TRL's ConstantLengthDataset);
//      each example's first token is never a target (example.h). The training examples are packed
//      in a seeded shuffled order (file order without shuffle); the validation examples in file order.
// Shuffling per epoch happens in the Batcher.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/example.h"

namespace ls::train {

struct DatasetOptions {
  uint32_t max_seq_len = 2048;     // tokens per example (per row when packing); longer ones are cut at the end
  bool train_on_prompt = false;    // also train on prompts, system/user turns and template text
  bool pack = false;
  bool shuffle = true;             // a new seeded order every epoch
  uint64_t seed = 0;               // shuffling, the validation split and the packing order
  uint32_t epochs = 3;             // transformers' Trainer default
  std::filesystem::path validation_file;  // validation examples from this file, or else:
  double validation_fraction = 0.0;       // this share of the training file held out (0: none)
  bool skip_bad_lines = false;     // list bad lines in warnings instead of throwing
  uint32_t threads = 0;            // for tokenizing; 0: one per core (at most 8)
};

// Throws ls::Error naming the option that is out of range.
void validate(const DatasetOptions& options);

struct Dataset {
  std::vector<Example> train;       // rows: one example each, or several when packed
  std::vector<Example> validation;  // rows, like train
  std::vector<std::string> warnings;  // skipped lines ("<file>:<line>: problem"), truncation counts
  size_t train_examples = 0, validation_examples = 0;  // examples before packing
  size_t skipped_lines = 0, truncated = 0;             // over both files
  size_t longest = 0;               // tokens of the longest example before truncation
};

// Examples over all rows: tokens and trained targets.
size_t token_count(const std::vector<Example>& rows);
size_t trained_count(const std::vector<Example>& rows);

// Loads the training file (and the validation file, if set). Messages lines render with
// chat_template; errors name "<file>:<line>:".
Dataset load_dataset(const std::filesystem::path& train_file, const tok::Tokenizer& tokenizer,
                     const tok::ChatTemplate& chat_template, const DatasetOptions& options);

}  // namespace ls::train
