#pragma once
// What a training run reads besides the weights: the model's tokenizer and chat template, and the data
// set they make of the JSONL files. The trainer reads it this way, and so does `--batch --plan`, which
// sizes the run's programs from it (train/run_shape.h) without training.
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "train/dataset.h"
#include "train/trainer.h"

namespace ls::train {

struct RunData {
  tok::Tokenizer tokenizer;
  Dataset data;
  std::vector<std::string> warnings;  // the chat template's, then the data set's
};

// Throws ls::Error when the files cannot be read or the data set has no training example.
RunData load_run_data(const TrainConfig& config);

}  // namespace ls::train
