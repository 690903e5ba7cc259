#pragma once
// A training record turned into token ids and a loss mask.
//
// `trained` marks tokens as TARGETS: the trainer predicts ids[i+1] from ids[0..i] and counts that loss
// iff trained[i+1]. trained[0] is always 0 (nothing precedes the first token, and in a packed row it
// keeps the previous example's last token from being trained to predict this one's first).
//   text:               encode(text, add_special_tokens = true) (the BOS the tokenizer's post-processor
//                       adds, if any) + EOS; all trained.
//   prompt/completion:  encode(prompt, true) untrained + encode(completion, false) + EOS trained.
//   messages:           the chat template's rendering (no generation prompt); each segment encoded on its
//                       own (encode(segment, false)) and concatenated; trained = the segment is trainable
//                       (the assistant's content and its end-of-turn text).
// EOS is not appended when the text/completion already ends with it (as mlx-lm). train_on_prompt
// trains every token (prompt, system and user turns, template text).
//
// Segment-wise encoding equals encoding the whole rendering except where a BPE pre-token would span
// a segment boundary: the header before an assistant turn ends in "\n" (ChatML) or "\n\n" (Llama 3), so
// assistant content that begins with whitespace or a newline (ChatML; Llama 3 strips it) is split
// there while the whole rendering would merge it with the header's newline. The mask needs the split;
// the model sees a tokenization it rarely saw, only at that boundary.
#include <cstdint>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/jsonl.h"

namespace ls::train {

struct Example {
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained;  // [ids.size()]: 1 = the loss of predicting this token counts
  size_t line = 0;               // 1-based line in its file (of the first example, for a packed row)
};

// Throws ls::Error (without a file position: the caller adds it) when the tokenizer has no EOS for a
// text/completion record or the chat template refuses the conversation.
Example encode_example(const Record& record, const tok::Tokenizer& tokenizer, const tok::ChatTemplate& chat_template,
                       bool train_on_prompt);

size_t trained_count(const Example& example);

}  // namespace ls::train
