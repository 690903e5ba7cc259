#pragma once
// A training record turned into token ids and a loss mask.
//
// `trained` marks tokens as TARGETS: the trainer predicts ids[i+1] from ids[0..i] and counts that loss
// iff trained[i+1]. trained[0] is always 0 (nothing precedes the first token, and in a packed row it
// keeps the previous example's last token from being trained to predict this one's first).
//   text:               encode(text, add_special_tokens = true) (the BOS the tokenizer's post-processor
//                       adds, if any) + EOS; all trained.
//   prompt/completion:  encode(prompt, true) untrained + encode(completion, false) + EOS trained.
//   messages:           the chat template's rendering (no generation prompt) as segments, each encoded
//                       on its own (encode(segment, false)) and concatenated; trained = the segment is
//                       trainable (the assistant's content and its end-of-turn text).
// EOS is not appended when the text/completion already ends with it (as mlx-lm). train_on_prompt
// trains every token (prompt, system and user turns, template text).
//
// Piece-wise encoding (prompt | completion, or the chat segments) differs from encoding the whole text
// only where the whole encoding would have a token across a piece boundary, in two ways:
//  - Byte-level BPE (Qwen, Llama 3): a pre-token spanning the boundary is cut in two, e.g. ChatML's
//    header "assistant\n" followed by content "\n\nHi" gives "\n" "\n\n" where the whole text has
//    "\n\n\n". The text is the same, and the split is kept: it is how the prompt ends at inference
//    (the generator encodes the rendering up to the generation prompt), so the model learns to continue
//    from the tokens it will see.
//  - SentencePiece-style (Llama 2, Mistral: a "▁" prepended to every encoded text): each piece would
//    gain a space. When the pieces' decoded text differs from the whole text's, the whole text's ids
//    are used instead, and token i goes with the piece its last byte falls in (the first token that
//    differs from the encoding of the text before piece k is the first of piece k), e.g. "▁Hello"
//    after "[/INST]" is trained though its space belongs to the template.
// Either way decode(ids) == decode(encode(whole text)).
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
