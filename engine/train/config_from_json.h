#pragma once
// The inverse of train::config_json(): a run's saved configuration (the run store's config_json, a run
// folder's config.json) back into a TrainConfig, e.g. to resume the run with the options it had. Keys
// that are absent keep their defaults; the store path, profiling and the data options config_json does
// not save (skip_bad_lines, threads) are left as they are in `base`.
#include <string>
#include <string_view>

#include "train/trainer.h"

namespace ls::train {

// Throws ls::Error naming `source` and the key when the text is not a JSON object or a value has the wrong
// type or an unknown name (a target, a schedule).
TrainConfig config_from_json(std::string_view text, const std::string& source, TrainConfig base = {});

}  // namespace ls::train
