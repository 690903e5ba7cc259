#pragma once
// Chat templates. A model folder's template (tokenizer_config.json's chat_template, chat_template.jinja,
// or a named one) is run by the Jinja engine (jinja/template.h) as transformers' apply_chat_template runs
// it (tokenizer/apply_chat_template.h): from_tokenizer_config() and from_jinja() give such a template. Its
// trainable segments are the assistant turns, found as TRL finds a completion after its prompt
// (tokenizer/assistant_spans.h): each turn from the end of the rendering of the messages before it with the
// generation prompt, through its end-of-turn text. The family is still recognised from the text, for the
// stop strings and the name shown to the user.
//
// Only a folder with no template (or one the engine cannot parse, with a warning) falls back to the
// recognised family rendered by hand, which is what recognise() gives: byte for byte as transformers'
// apply_chat_template(tokenize=False) renders plain system / user / assistant conversations with the
// family's real template (no tools). tests/fixtures/chat_templates/ holds the real templates of each family
// (templates.json says which models carry them) and tests/fixtures/chat_rendered.json their renderings,
// which the tests compare with ours.
//
// Families (ChatFormat) and their variants (name()):
//   ChatML        plain ChatML (OpenHermes, SmolLM v1): "<|im_start|>{role}\n{content}<|im_end|>\n" per
//                 message, generation prompt "<|im_start|>assistant\n". Also the fallback for an
//                 unknown template (with a warning).
//   ChatMLQwen25  ChatML with a default system turn when the first message is not a system one; its
//                 text is read from the template (Qwen2/2.5 and Qwen2.5-Coder: "You are Qwen, created
//                 by Alibaba Cloud. You are a helpful assistant."; SmolLM2: "You are a helpful AI
//                 assistant named SmolLM, trained by Hugging Face").
//   ChatMLQwen3   Qwen3: no default system; an assistant turn's "<think>...</think>" reasoning is dropped
//                 before the last user query and rendered as "<think>\n{reasoning}\n</think>\n\n" after
//                 it (for the last message always); enable_thinking=false adds an empty think block to
//                 the generation prompt.
//   Llama3        Llama 3: bos + "<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>";
//                 the first release's template always appends the assistant header.
//   Llama31       Llama 3.1 / 3.2: a system turn always comes first, "Cutting Knowledge Date: December
//                 2023\nToday Date: {date}\n\n{system|trim}"; the date is 26 Jul 2024 (3.1) or today
//                 (3.2, strftime_now), unless set_date_string() gives one.
//   Llama2        "<s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user|trim} [/INST] {assistant|trim} </s>".
//   Mistral       [INST] templates without <<SYS>>: the first release (no system role, no trimming),
//                 the 2024 revision (" [INST] ", system before the first user message) and v0.3
//                 ("[INST] ...[/INST]", system before the LAST user message, assistant content trimmed).
//   Zephyr        TinyLlama-Chat / zephyr: "<|{role}|>\n{content}</s>\n", generation prompt "<|assistant|>\n".
//
// Trainable segments are what the model is trained to emit: an assistant message's rendered content
// and its end-of-turn text ("<|im_end|>", "<|eot_id|>", "</s>"); for [INST] families also the space
// the template puts between "[/INST]" and the answer (SentencePiece tokenizers fold it into the
// answer's first token). Headers, user and system turns, separators after the end-of-turn text and
// the generation prompt are not trainable.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ls::tok {

namespace jinja {
class Template;
}

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

// A piece of the rendered text. Concatenated in order, the segments are the whole rendering.
struct ChatSegment {
  std::string text;
  bool trainable = false;
};

enum class ChatFormat { ChatMLQwen25, ChatMLQwen3, ChatML, Llama3, Llama31, Llama2, Mistral, Zephyr };

class ChatTemplate {
 public:
  // Recognises the family of a Jinja template. An empty or unknown template gives ChatML and a
  // warning; a template of a known family whose text is not one of the known templates' gives that
  // family and a warning. Warnings name source_name and say the output may differ from the model's.
  static ChatTemplate recognise(std::string_view jinja, const std::string& source_name,
                                std::vector<std::string>* warnings);
  // A model's own template, run by the Jinja engine; its family recognised for stop strings and the name.
  // An empty template, or one the engine cannot parse (a warning with the line and column), gives
  // recognise()'s hand-rendered family instead.
  static ChatTemplate from_jinja(std::string_view jinja, const std::string& source_name,
                                 std::vector<std::string>* warnings);
  // The template of a tokenizer_config.json (tokenizer/model_chat_template.h: chat_template.jinja beside it
  // takes precedence, else "chat_template", a string or the "default" of a list of {name, template}),
  // through from_jinja(), with the config's special tokens (bos_token, eos_token, ...; strings or
  // {"content": ...}). Throws ls::Error naming the file for unreadable or malformed JSON and for a
  // chat_template that is neither (or a list without "default"); a missing one gives ChatML + warning.
  static ChatTemplate from_tokenizer_config(const std::filesystem::path& tokenizer_config_json,
                                            std::vector<std::string>* warnings);

  ChatFormat format() const { return format_; }
  // The family's name ("the model's own template" for a template the engine runs but no family fits).
  std::string_view name() const { return name_; }
  // Whether the model's template runs (the Jinja engine), rather than its family rendered by hand.
  bool runs_model_template() const { return engine_ != nullptr; }

  // The rendering in segments. add_generation_prompt appends the assistant header (ignored, as by the
  // templates, for Llama 2 and Mistral). Throws ls::Error naming the source for an empty conversation,
  // a role other than system / user / assistant, and where the template raises (Llama 2 and Mistral:
  // roles not alternating user/assistant after an optional first system message), with the template's
  // line and column when the engine runs it.
  std::vector<ChatSegment> render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  std::string render_text(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  std::vector<std::string> stop_strings() const;  // end-of-turn texts: "<|im_end|>", "<|eot_id|>", "</s>", ...
  std::string bos_text() const;                   // what the rendering begins with that is the bos token; "" if none

  // Template arguments transformers would take as apply_chat_template(..., name=value).
  void set_date_string(std::string date) { date_string_ = std::move(date); }  // Llama 3.1/3.2: "26 Jul 2024"
  void set_enable_thinking(bool on) { enable_thinking_ = on; enable_thinking_set_ = true; }  // Qwen3
  void set_bos_token(std::string bos) { bos_ = std::move(bos); }
  void set_eos_token(std::string eos) { eos_ = std::move(eos); }
  // Any other special token the template reads (unk_token, pad_token, ...), as transformers passes them.
  void set_special_token(const std::string& name, std::string text);

  // Whether the template's text is one of the known templates of tests/fixtures/chat_templates.
  bool known_text() const { return known_text_; }
  // The identity recognise() looks up known templates by (see jinja_source.h).
  static uint64_t fingerprint(std::string_view jinja);

 private:
  enum class Variant { none, llama3_always_prompt, llama32, mistral_legacy, mistral_system, mistral_v3, phi3 };

  ChatFormat format_ = ChatFormat::ChatML;
  Variant variant_ = Variant::none;
  std::string name_ = "ChatML";
  std::string source_;          // where the template came from, for messages
  std::string default_system_;  // ChatMLQwen25
  std::string bos_, eos_;
  std::string date_string_;  // Llama31: empty = the template's own default
  bool enable_thinking_ = true, enable_thinking_set_ = false;
  bool known_text_ = false;
  std::shared_ptr<const jinja::Template> engine_;                 // the model's template; null: by hand
  std::vector<std::pair<std::string, std::string>> other_tokens_;  // special tokens besides bos and eos

  void check_messages(std::span<const ChatMessage> messages) const;  // not empty; system, user, assistant
  std::vector<ChatSegment> render_by_hand(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  std::string render_with_engine(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
};

}  // namespace ls::tok
