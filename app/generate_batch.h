#pragma once
// `lorastudio generate --prompts FILE.jsonl`: replies to every prompt of a JSON Lines file, --batch-size of them
// decoding together (infer::BatchGenerator), written as JSON Lines in the prompts' order.
#include "generate_command.h"

namespace ls::app {

// Returns the exit code. The replies go to --out (through "<out>.partial", renamed when all are written) or to
// stdout; progress and the throughput to stderr.
int run_generate_batch(const GenerateArgs& args);

}  // namespace ls::app
