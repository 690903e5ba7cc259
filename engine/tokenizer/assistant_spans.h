#pragma once
// Where the assistant turns are in a chat template's rendering, found as TRL finds a completion after its
// prompt: by rendering the conversation before each assistant message with the generation prompt. That
// rendering is a prefix of the whole one for most templates; the turn then runs from its end to the end of
// the first end-of-turn text (eos, <|im_end|>, ...) that follows, so that separators after it stay
// untrained. Two kinds of templates need more:
//  - the generation prompt is only partly in the whole rendering (Qwen3 with enable_thinking=false puts an
//    empty think block in it that an answer which thinks does not have): the turn starts after the last
//    whole line of the prompt that the rendering has;
//  - earlier messages render differently once later ones exist (Mistral v0.3 puts the system message in
//    the last user turn; Qwen3 drops the reasoning of answers before the last question): the turn is read
//    from the rendering through the assistant message, after the prompt's last line, and found in the whole.
// An assistant message that comes first, where the template renders no usable prompt, starts at its answer.
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ls::tok {

struct TextSpan {
  size_t begin = 0, end = 0;  // byte offsets into the rendering
};

struct AssistantMessage {
  size_t index;         // in the conversation
  std::string content;  // its text
};

// render(n, add_generation_prompt): the rendering of the conversation's first n messages (throws where the
// template refuses them). `assistant_messages` are the conversation's assistant messages, in order.
// Throws ls::Error naming the message when a turn cannot be placed.
std::vector<TextSpan> assistant_spans(const std::string& whole, std::span<const AssistantMessage> assistant_messages,
                                      const std::function<std::string(size_t, bool)>& render,
                                      std::span<const std::string> end_of_turn);

}  // namespace ls::tok
