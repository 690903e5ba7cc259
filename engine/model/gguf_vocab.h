#pragma once
// The tokenizer of a Hugging Face model folder as GGUF metadata, the keys convert_hf_to_gguf.py writes for
// a byte-level BPE tokenizer (its _set_vocab_gpt2 and gguf-py's SpecialVocab):
//   tokenizer.ggml.model "gpt2", tokenizer.ggml.pre (llama.cpp's name of the pre-tokenizer: "qwen2",
//   "llama-bpe", "gpt-2", chosen by the tokenizer.json's split regex, as llama.cpp has no other way to
//   learn it), tokenizer.ggml.tokens (ids 0..vocab_size-1, "[PAD<i>]" for ids the tokenizer lacks),
//   tokenizer.ggml.token_type (1 normal, 3 control: special added tokens and <|...|>, 4 user-defined:
//   other added tokens, 5 unused: the padding), tokenizer.ggml.merges ("a b"; a space inside a part
//   written as U+0120), tokenizer.ggml.{bos,eos,unknown,padding}_token_id (tokenizer_config.json's tokens,
//   else config.json's *_token_id), tokenizer.ggml.add_{bos,eos}_token (what tokenizer_config.json or a
//   TemplateProcessing post-processor says, false where neither says: what transformers adds), tokenizer.chat_template (tokenizer_config.json's, else
//   chat_template.jinja).
// SentencePiece BPE tokenizers as transformers converts them (byte_fallback, a Replace(" ", "▁") normalizer):
// Llama 2 and Mistral v0.1 (legacy form: a Prepend("▁") before it, no pre-tokenizer) and Gemma (no Prepend; no
// pre-tokenizer or a Split on " ") are written as convert_hf_to_gguf.py's _set_vocab_sentencepiece writes them:
// tokenizer.ggml.model "llama", pre "default", tokens, tokenizer.ggml.scores (minus the first merge rank that
// makes each token, added tokens included: llama.cpp's SPM then merges in the order transformers' BPE does),
// token types with 2 unknown and 6 byte (<0xXX>), the same special ids and add_bos/add_eos, and for Gemma's
// form tokenizer.ggml.add_space_prefix false. Another tokenizer (a Metaspace pre-tokenizer, Unigram,
// WordPiece) or a pre-tokenizer llama.cpp does not know gives ls::Error rather than a file that tokenizes
// differently.
#include <cstdint>
#include <filesystem>

#include "model/gguf_writer.h"

namespace ls::model {

void add_gguf_vocab(gguf::Writer& w, const std::filesystem::path& model_dir, uint32_t vocab_size);

}  // namespace ls::model
