#include "train/run_data.h"

#include "error.h"
#include "tokenizer/chat_template.h"

namespace ls::train {

RunData load_run_data(const TrainConfig& c) {
  if (!std::filesystem::is_directory(c.model))
    throw Error(c.model.string() + ": not a model folder (no such directory)");
  RunData r{.tokenizer = tok::Tokenizer::load(c.model), .data = {}, .warnings = {}};
  const auto config = c.model / "tokenizer_config.json";
  const auto tmpl = std::filesystem::exists(config) ? tok::ChatTemplate::from_tokenizer_config(config, &r.warnings)
                                                     : tok::ChatTemplate::recognise("", config.string(), &r.warnings);
  r.data = load_dataset(c.data, r.tokenizer, tmpl, c.data_options);
  if (r.data.train.empty()) throw Error(c.data.string() + ": no training examples");
  r.warnings.insert(r.warnings.end(), r.data.warnings.begin(), r.data.warnings.end());
  return r;
}

}  // namespace ls::train
