#pragma once
// Chat templates. Model folders carry a Jinja template in tokenizer_config.json; we do not run Jinja:
// the template's family is recognised from its text and rendered by hand exactly as
// transformers' apply_chat_template renders plain system/user/assistant conversations. Families:
// ChatML as Qwen2/Qwen2.5 write it (a default system turn when none is given, its text read from the
// template), as Qwen3 writes it (<think> handling), plain ChatML (SmolLM2), Llama 3 (3.0, and 3.1/3.2
// with their "Cutting Knowledge Date" system block), Llama 2 and Mistral ([INST]). An unknown
// template falls back to ChatML with a warning.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

// A piece of the rendered text; trainable pieces are what the model is trained to emit (the
// assistant's content and its end-of-turn text).
struct ChatSegment {
  std::string text;
  bool trainable = false;
};

enum class ChatFormat { ChatMLQwen25, ChatMLQwen3, ChatML, Llama3, Llama31, Llama2, Mistral };

class ChatTemplate {
 public:
  // Recognises the family of a Jinja template; an unknown or empty one gives ChatML and a warning
  // naming source_name.
  static ChatTemplate recognise(std::string_view jinja, const std::string& source_name,
                                std::vector<std::string>* warnings);
  // The chat_template of a tokenizer_config.json (a string, or a list of {name, template}: "default").
  static ChatTemplate from_tokenizer_config(const std::filesystem::path& path, std::vector<std::string>* warnings);

  ChatFormat format() const { return format_; }
  std::string_view name() const;
  // Throws ls::Error for a conversation the real template would refuse (unknown role, system not
  // first, Mistral with a system message, Llama 2 turns out of order).
  std::vector<ChatSegment> render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  std::string render_text(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  std::vector<std::string> stop_strings() const;  // end-of-turn texts

 private:
  ChatFormat format_ = ChatFormat::ChatML;
  std::string default_system_;      // ChatMLQwen25: the system turn used when none is given
  bool always_generation_prompt_ = false;  // Llama 3 templates that append the header unconditionally
  bool date_from_clock_ = false;    // Llama 3.2: "Today Date" is today (strftime_now) rather than 26 Jul 2024
};

}  // namespace ls::tok
