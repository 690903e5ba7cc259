#pragma once
// Chatting with a model, for every front end (`lorastudio generate`/`chat` in the terminal, the GUI's
// Chat panel): the model folder's tokenizer, chat template and end-of-sequence ids; a reply streamed as
// printable text with the template's stop strings cut out; and a chat turn that re-renders the whole
// conversation and prefills only what the KV cache does not hold yet.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "infer/generator.h"
#include "model/config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ls::infer {

// A model folder's text side.
struct ChatModelFiles {
  tok::Tokenizer tokenizer;
  tok::ChatTemplate chat;
  std::vector<int32_t> eos;           // config.json's, generation_config.json's and the tokenizer's eos ids
  std::vector<std::string> warnings;  // about the chat template (unknown family, unknown text)

  // Throws ls::Error naming the folder when tokenizer.json is missing, or the file when
  // tokenizer_config.json or generation_config.json is malformed.
  static ChatModelFiles load(const std::filesystem::path& dir, const model::ModelConfig& config);
};

struct Reply {
  std::string text;       // what was shown: the reply without the stop string
  GenerateStats stats;    // stop_reason "stop string" when a stop string ended it
  bool history_dropped = false;  // chat_turn: the context was full, earlier turns were left out
};

// Called with each piece of text as it becomes printable (possibly empty, once per token); returns
// false to stop generating.
using OnText = std::function<bool(std::string_view piece)>;

// Generates a reply to the context the generator holds plus `prompt`, streaming text through on_text.
Reply stream_reply(Generator& generator, const tok::Tokenizer& tokenizer, std::span<const int32_t> prompt,
                   const GenerateOptions& options, std::vector<std::string> stop_strings, const OnText& on_text);

// One turn of a conversation whose last message is the user's: renders `messages` with the generation
// prompt, keeps the longest prefix the generator's KV cache shares with it, prefills the rest and
// streams the reply. When the turn and max_new_tokens do not fit the context, the earlier turns (all but
// a leading system message and the last message) are dropped from `messages` and the cache starts over.
// Throws ls::Error when even the last message alone does not fit.
Reply chat_turn(Generator& generator, const ChatModelFiles& files, std::vector<tok::ChatMessage>& messages,
                const GenerateOptions& options, const OnText& on_text);

}  // namespace ls::infer
