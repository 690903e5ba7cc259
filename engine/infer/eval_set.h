#pragma once
// Evaluation: replies to a set of prompts from the model with an adapter and, optionally, from the base model
// beside it, B sequences decoding together (infer::BatchGenerator). Used by `lorastudio generate --prompts`
// (any JSON Lines file) and by the app's Evaluate panel (a run's held-out validation examples).
//
// A JSON Lines record as a prompt (the training formats, train/jsonl.h):
//   {"messages": [...]}: the conversation before its last assistant message (all of it when it ends with
//     another role), rendered by the chat template with the generation prompt; that message is the reference.
//   {"prompt": ..., "completion": ...}: the prompt as it is (as training reads it); the completion the reference.
//   {"text": ...}: the text, continued as it is.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "infer/batch_generator.h"
#include "infer/chat_session.h"
#include "train/dataset.h"
#include "train/jsonl.h"

namespace ls::infer {

struct EvalPrompt {
  size_t line = 0;           // 1-based line of its file
  std::vector<int32_t> ids;  // the tokens generated from
  std::string shown;         // the prompt as a person reads it: the last user message, the prompt, or the text
  std::string reference;     // the answer the file gives, if any
  bool chat = false;         // the chat template's stop strings apply
};

// Throws ls::Error "<where>: problem" for a conversation with nothing to reply to or an empty prompt.
EvalPrompt eval_prompt(const train::Record& r, const ChatModelFiles& files, const std::string& where);

// The records of a training run's validation examples, in file order: every line of options.validation_file,
// or else the validation_fraction of `train_file` held out exactly as train::load_dataset holds it out for the
// same options (the same seed, the same lines skipped or cut). Throws ls::Error when the options hold out
// nothing.
std::vector<train::Record> held_out_records(const std::filesystem::path& train_file, const tok::Tokenizer& tokenizer,
                                            const tok::ChatTemplate& chat_template, train::DatasetOptions options);

// One side's reply to one prompt.
struct EvalReply {
  std::string text;  // without the stop string
  uint32_t new_tokens = 0;
  std::string stop;  // "eos", "max tokens", "stop string", "context full"
};

struct EvalRow {
  size_t line = 0;
  std::string prompt, reference;
  uint32_t prompt_tokens = 0;
  EvalReply reply, base;  // base: only when compared
};

struct EvalSideStats {
  BatchStats batch;
  double wall_seconds = 0;
};

// Thrown out of generate_replies when `cancelled` returns true.
struct EvalCancelled {};

// The replies of `model` (with `adapter` when not null) to every prompt, B = min(batch, prompts) at a time.
// on_reply(i, reply) is called on this thread as reply i is complete; cancelled() is asked at every token.
std::vector<EvalReply> generate_replies(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter,
                                        const ChatModelFiles& files, const GeneratorOptions& generator,
                                        const GenerateOptions& options, const std::vector<std::string>& stop_strings,
                                        const std::vector<EvalPrompt>& prompts, uint32_t batch,
                                        const std::function<void(size_t, const EvalReply&)>& on_reply,
                                        const std::function<bool()>& cancelled, EvalSideStats* stats);

// One JSON object a row, in the rows' order: line, reference (if any), reply, prompt_tokens, new_tokens, stop, and
// with `compared` base_reply, base_new_tokens, base_stop. Written to `<path>.partial`, renamed when complete.
// Throws ls::Error naming the file when it cannot be written.
void write_eval_jsonl(const std::vector<EvalRow>& rows, bool compared, const std::filesystem::path& path);
std::string eval_row_json(const EvalRow& row, bool compared);

}  // namespace ls::infer
