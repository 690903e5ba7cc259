#pragma once
// tokenizer.json "post_processor" for one sequence, applied when encode() is asked to add special
// tokens: TemplateProcessing ("single": special tokens around $A), BertProcessing and
// RobertaProcessing (cls $A sep), ByteLevel (offsets only: nothing to do for ids), Sequence of them.
#include <cstdint>
#include <vector>

#include "tokenizer/json_fields.h"

namespace ls::tok {

class PostProcessor {
 public:
  // `j` null: none. Throws ls::Error naming the file and the unsupported component.
  static PostProcessor from_json(const Json& j, const Where& w);

  // ids -> the ids with the special tokens of a single sequence added.
  std::vector<int32_t> apply(std::vector<int32_t> ids) const;

 private:
  // One step: ids before and after the sequence (Llama 2: before = {1}).
  struct Template {
    std::vector<int32_t> before, after;
  };
  void add(const Json& j, const Where& w);

  std::vector<Template> steps_;
};

}  // namespace ls::tok
