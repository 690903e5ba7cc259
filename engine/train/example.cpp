#include "train/example.h"

#include <algorithm>
#include <string_view>

#include "error.h"

namespace ls::train {

namespace {

struct Piece {
  std::string_view text;
  bool trained = false;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return size_t(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// The pieces' text as ids and mask (example.h): each piece encoded on its own, unless that changes
// the text, in which case the whole text's ids with piece boundaries found by encoding prefixes.
// add_special_tokens applies to the start of the text (the first piece).
void encode_pieces(Example& e, std::span<const Piece> pieces, const tok::Tokenizer& tokenizer, bool add_special_tokens) {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<uint8_t> trained;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto piece_ids = tokenizer.encode(pieces[k].text, add_special_tokens && k == 0);
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    trained.insert(trained.end(), piece_ids.size(), uint8_t(pieces[k].trained));
    text += pieces[k].text;
  }
  const auto whole = pieces.size() == 1 ? ids : tokenizer.encode(text, add_special_tokens);
  if (ids != whole && tokenizer.decode(ids) != tokenizer.decode(whole)) {
    // Token m_k of the whole encoding is the first that differs from the encoding of the text before
    // piece k: the first to end inside piece k (or later). Tokens [m_k, m_k+1) go with piece k.
    ids = whole;
    trained.assign(whole.size(), 0);
    size_t offset = 0, begin = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      offset += pieces[k].text.size();
      size_t end = whole.size();
      if (k + 1 < pieces.size())
        end = std::max(begin, common_prefix(tokenizer.encode(std::string_view(text).substr(0, offset), add_special_tokens), whole));
      std::fill(trained.begin() + ptrdiff_t(begin), trained.begin() + ptrdiff_t(end), uint8_t(pieces[k].trained));
      begin = end;
    }
  }
  e.ids.insert(e.ids.end(), ids.begin(), ids.end());
  e.trained.insert(e.trained.end(), trained.begin(), trained.end());
}

void append_eos(Example& e, const tok::Tokenizer& tokenizer) {
  const auto eos = tokenizer.eos_id();
  if (!eos) throw Error(tokenizer.source().string() + ": no EOS token (eos_token in tokenizer_config.json), needed to end a training example");
  if (!e.ids.empty() && e.ids.back() == *eos) return;
  e.ids.push_back(*eos);
  e.trained.push_back(1);
}

}  // namespace

Example encode_example(const Record& r, const tok::Tokenizer& tokenizer, const tok::ChatTemplate& chat_template,
                       bool train_on_prompt) {
  Example e;
  e.line = r.line;
  switch (r.kind) {
    case RecordKind::text: {
      const Piece piece{r.text, true};
      encode_pieces(e, {&piece, 1}, tokenizer, true);
      append_eos(e, tokenizer);
      break;
    }
    case RecordKind::prompt_completion: {
      const Piece pieces[] = {{r.prompt, train_on_prompt}, {r.completion, true}};
      encode_pieces(e, pieces, tokenizer, true);
      append_eos(e, tokenizer);
      break;
    }
    case RecordKind::messages: {
      const auto segments = chat_template.render(r.messages, false);
      std::vector<Piece> pieces;
      for (const auto& s : segments) pieces.push_back({s.text, train_on_prompt || s.trainable});
      encode_pieces(e, pieces, tokenizer, false);
      break;
    }
  }
  if (!e.trained.empty()) e.trained[0] = 0;
  return e;
}

size_t trained_count(const Example& e) { return size_t(std::count(e.trained.begin(), e.trained.end(), uint8_t(1))); }

}  // namespace ls::train
