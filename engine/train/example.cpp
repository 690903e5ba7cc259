#include "train/example.h"

#include <algorithm>

#include "error.h"

namespace ls::train {

namespace {

void append(Example& e, const std::vector<int32_t>& ids, bool trained) {
  e.ids.insert(e.ids.end(), ids.begin(), ids.end());
  e.trained.insert(e.trained.end(), ids.size(), uint8_t(trained));
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
    case RecordKind::text:
      append(e, tokenizer.encode(r.text, true), true);
      append_eos(e, tokenizer);
      break;
    case RecordKind::prompt_completion:
      append(e, tokenizer.encode(r.prompt, true), train_on_prompt);
      append(e, tokenizer.encode(r.completion, false), true);
      append_eos(e, tokenizer);
      break;
    case RecordKind::messages:
      for (const auto& segment : chat_template.render(r.messages, false))
        append(e, tokenizer.encode(segment.text, false), train_on_prompt || segment.trainable);
      break;
  }
  if (!e.trained.empty()) e.trained[0] = 0;
  return e;
}

size_t trained_count(const Example& e) { return size_t(std::count(e.trained.begin(), e.trained.end(), uint8_t(1))); }

}  // namespace ls::train
