#pragma once
// Training files in JSON Lines: one JSON object per line, in one of three formats, decided per line
// (a file may mix them):
//   {"text": "..."}                                   plain text, every token trained
//   {"prompt": "...", "completion": "..."}            the completion trained, the prompt not
//   {"messages": [{"role": "user", "content": "..."}, ...]}   a chat, rendered by the model's template
// Other keys are ignored; a line with the keys of two formats is refused as ambiguous. Blank lines
// are skipped, a UTF-8 byte order mark on the first line and a CR before the LF are accepted.
// Errors name "<file>:<line>:" (1-based) and the problem.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat_template.h"

namespace ls::train {

enum class RecordKind { text, prompt_completion, messages };

// One line of a training file, checked: text and completion are non-empty, messages has at least one
// message and every role is system, user or assistant (the prompt may be empty).
struct Record {
  RecordKind kind = RecordKind::text;
  std::string text;                        // text
  std::string prompt, completion;          // prompt_completion
  std::vector<tok::ChatMessage> messages;  // messages
  size_t line = 0;                         // 1-based line in its file
};

// Parses one non-blank line; throws ls::Error "<where>: <problem>" (where is e.g. "data.jsonl:12").
Record parse_record(std::string_view line, const std::string& where);

// A bad line (as parse_record would throw, prefixed with "<file>:<line>: ").
struct LineError {
  size_t line = 0;
  std::string message;
};

// Reads a whole file. With skip_bad_lines, bad lines go to `bad` and reading goes on; otherwise the
// first bad line throws. Throws when the file cannot be read.
std::vector<Record> read_jsonl(const std::filesystem::path& path, bool skip_bad_lines, std::vector<LineError>* bad);

}  // namespace ls::train
