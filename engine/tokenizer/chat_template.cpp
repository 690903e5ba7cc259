#include "tokenizer/chat_template.h"

#include <algorithm>
#include <ctime>
#include <optional>

#include "error.h"
#include "tokenizer/apply_chat_template.h"
#include "tokenizer/assistant_spans.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/jinja_source.h"
#include "tokenizer/model_chat_template.h"
#include "tokenizer/py_str.h"

namespace ls::tok {

namespace {

// Fingerprints (jinja_source.h) of the templates in tests/fixtures/chat_templates; the test
// KnownTemplatesAreRecognisedWithoutWarning keeps this list and those files in step.
constexpr uint64_t kKnownTemplates[] = {
    0xc79d80da63b0eb83ull,  // qwen2.5-instruct.jinja (Qwen2.5 and Qwen2.5-Coder Instruct)
    0xa799e64210fd92a4ull,  // qwen3.jinja
    0x79eb7b804c10bab6ull,  // chatml.jinja
    0x22361440775808a8ull,  // smollm2-instruct.jinja
    0x34018151acee5356ull,  // llama3-npm.jinja (Llama 3 as first released)
    0x5b7709ece02c8fa2ull,  // llama3-instruct.jinja
    0xb6e32cbc8a5de960ull,  // llama3.1-instruct.jinja
    0x62f26ad3d68a16d4ull,  // llama3.2-instruct.jinja
    0x824ea90a39362265ull,  // llama2-chat.jinja
    0x1c4043d8fddb4d5bull,  // mistral-instruct-legacy.jinja
    0x9f85cf5b906ec937ull,  // mistral-instruct-system.jinja
    0x138bfc2fb124e3c5ull,  // mistral-instruct-v0.3.jinja
    0xc3ef162edd203514ull,  // zephyr.jinja
};

bool has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

bool has_literal(const JinjaSource& src, std::string_view value) {
  return std::find(src.literals.begin(), src.literals.end(), value) != src.literals.end();
}

// The default system turn of a ChatML template: a literal "<|im_start|>system\n{text}<|im_end|>\n".
std::optional<std::string> default_system_turn(const JinjaSource& src) {
  constexpr std::string_view kHead = "<|im_start|>system\n", kTail = "<|im_end|>\n";
  for (const auto& v : src.literals) {
    if (v.size() > kHead.size() + kTail.size() && v.starts_with(kHead) && v.ends_with(kTail)) {
      std::string text = v.substr(kHead.size(), v.size() - kHead.size() - kTail.size());
      if (!has(text, "<|im_start|>") && !has(text, "<|im_end|>")) return text;
    }
  }
  return std::nullopt;
}

std::string today() {  // strftime("%d %b %Y") of the local date, as transformers' strftime_now gives it
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  return buf;
}

// Segments are built by appending; neighbours of the same kind merge, empty texts vanish.
struct Segments {
  std::vector<ChatSegment> list;
  void add(std::string_view text, bool trainable = false) {
    if (text.empty()) return;
    if (!list.empty() && list.back().trainable == trainable)
      list.back().text += text;
    else
      list.push_back({std::string(text), trainable});
  }
};

// Qwen3's split of an assistant message into reasoning and answer (its template, without
// message.reasoning_content): content.split('</think>')[-1].lstrip('\n') is the answer and
// content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') the reasoning.
struct Thought {
  std::string reasoning, answer;
};
Thought split_think(const std::string& content) {
  constexpr std::string_view kOpen = "<think>", kClose = "</think>";
  const size_t first_close = content.find(kClose);
  if (first_close == std::string::npos) return {"", content};
  Thought t;
  t.answer = py_lstrip(std::string_view(content).substr(content.rfind(kClose) + kClose.size()), "\n");
  const std::string before = py_rstrip(std::string_view(content).substr(0, first_close), "\n");
  const size_t open = before.rfind(kOpen);
  t.reasoning = py_lstrip(
      open == std::string::npos ? std::string_view(before) : std::string_view(before).substr(open + kOpen.size()),
      "\n");
  return t;
}

}  // namespace

uint64_t ChatTemplate::fingerprint(std::string_view jinja) { return scan_jinja(jinja).fingerprint; }

ChatTemplate ChatTemplate::recognise(std::string_view jinja, const std::string& source,
                                     std::vector<std::string>* warnings) {
  const JinjaSource src = scan_jinja(jinja);
  ChatTemplate t;
  t.source_ = source;
  t.known_text_ =
      std::find(std::begin(kKnownTemplates), std::end(kKnownTemplates), src.fingerprint) != std::end(kKnownTemplates);
  bool recognised = true;
  if (has(jinja, "<|im_start|>")) {
    if (has(jinja, "<think>") && has(jinja, "reasoning_content") && has(jinja, "last_query_index")) {
      t.format_ = ChatFormat::ChatMLQwen3;
      t.name_ = "ChatML (Qwen3)";
    } else if (auto system = default_system_turn(src)) {
      t.format_ = ChatFormat::ChatMLQwen25;
      t.default_system_ = *system;
      t.name_ = system->starts_with("You are Qwen") ? "ChatML (Qwen2.5)" : "ChatML (default system prompt)";
    } else {
      t.format_ = ChatFormat::ChatML;
      t.name_ = "ChatML";
    }
  } else if (has(jinja, "<|start_header_id|>")) {
    t.bos_ = "<|begin_of_text|>";
    t.eos_ = "<|eot_id|>";
    if (has(jinja, "Cutting Knowledge Date")) {
      t.format_ = ChatFormat::Llama31;
      t.variant_ = has(jinja, "strftime_now") ? Variant::llama32 : Variant::none;
      t.name_ = t.variant_ == Variant::llama32 ? "Llama 3.2" : "Llama 3.1";
    } else {
      t.format_ = ChatFormat::Llama3;
      t.variant_ = has(jinja, "add_generation_prompt") ? Variant::none : Variant::llama3_always_prompt;
      t.name_ = t.variant_ == Variant::none ? "Llama 3" : "Llama 3 (always adds the assistant header)";
    }
  } else if (has(jinja, "[INST]")) {
    t.bos_ = "<s>";
    t.eos_ = "</s>";
    if (has(jinja, "<<SYS>>")) {
      t.format_ = ChatFormat::Llama2;
      t.name_ = "Llama 2";
    } else {
      t.format_ = ChatFormat::Mistral;
      if (has_literal(src, "[/INST]")) {
        t.variant_ = Variant::mistral_v3;
        t.name_ = "Mistral v0.3";
      } else if (has_literal(src, " [INST] ")) {
        t.variant_ = Variant::mistral_system;
        t.name_ = "Mistral (system in the first [INST])";
      } else {
        t.variant_ = Variant::mistral_legacy;
        t.name_ = "Mistral";
      }
    }
  } else if (has_literal(src, "<|user|>\n") && has_literal(src, "<|assistant|>\n")) {
    t.format_ = ChatFormat::Zephyr;
    t.bos_ = "<s>";
    if (has(jinja, "<|end|>")) {  // Phi-3, Phi-3.5, Phi-4-mini: Zephyr's headers, turns closed by <|end|>
      t.variant_ = Variant::phi3;
      t.name_ = "Phi-3";
      t.eos_ = "<|end|>";
    } else {
      t.name_ = "Zephyr";
      t.eos_ = "</s>";
    }
  } else {
    recognised = false;
    t.name_ = "ChatML (fallback)";
  }
  if (warnings && !recognised)
    warnings->push_back(source + ": " + (jinja.empty() ? "no chat template" : "chat template not recognised") +
                        "; using ChatML (<|im_start|>role\\n...<|im_end|>), which may differ from the model's own");
  else if (warnings && !t.known_text_)
    warnings->push_back(source + ": chat template is not one of the known texts; rendering it as " + t.name_ +
                        ", which may differ from the model's own template");
  return t;
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::filesystem::path& path,
                                                 std::vector<std::string>* warnings) {
  const ModelChatTemplate m = read_model_chat_template(path);
  ChatTemplate t = from_jinja(m.jinja, m.source, warnings);
  for (const auto& [name, text] : m.special_tokens) t.set_special_token(name, text);
  return t;
}

ChatTemplate ChatTemplate::from_jinja(std::string_view jinja, const std::string& source,
                                      std::vector<std::string>* warnings) {
  if (jinja.empty()) return recognise(jinja, source, warnings);
  std::shared_ptr<const jinja::Template> engine;
  try {
    engine = std::make_shared<const jinja::Template>(jinja, source);
  } catch (const jinja::TemplateError& e) {
    if (warnings)
      warnings->push_back(source + ": the chat template cannot be run (" + e.message() + ", line " +
                          std::to_string(e.line()) + ", column " + std::to_string(e.column()) +
                          "); rendering its recognised family instead, which may differ from the model's own");
    return recognise(jinja, source, warnings);
  }
  ChatTemplate t = recognise(jinja, source, nullptr);  // the family: stop strings and the name
  t.engine_ = std::move(engine);
  if (t.name_ == "ChatML (fallback)") t.name_ = "the model's own template";  // no family recognised
  return t;
}

void ChatTemplate::set_special_token(const std::string& name, std::string text) {
  if (name == "bos_token") {
    bos_ = std::move(text);
    return;
  }
  if (name == "eos_token") {
    eos_ = std::move(text);
    return;
  }
  for (auto& [k, v] : other_tokens_) {
    if (k == name) {
      v = std::move(text);
      return;
    }
  }
  other_tokens_.emplace_back(name, std::move(text));
}

std::vector<std::string> ChatTemplate::stop_strings() const {
  std::vector<std::string> stops;
  switch (format_) {
    case ChatFormat::ChatML:
    case ChatFormat::ChatMLQwen25:
    case ChatFormat::ChatMLQwen3:
      stops = {"<|im_end|>", "<|endoftext|>"};
      break;
    case ChatFormat::Llama3:
    case ChatFormat::Llama31:
      stops = {"<|eot_id|>", "<|end_of_text|>"};
      break;
    case ChatFormat::Llama2:
    case ChatFormat::Mistral:
      break;
    case ChatFormat::Zephyr:
      if (variant_ == Variant::phi3) stops = {"<|end|>", "<|endoftext|>"};  // whatever the eos token is
      break;
  }
  if (!eos_.empty() && std::find(stops.begin(), stops.end(), eos_) == stops.end()) stops.push_back(eos_);
  return stops;
}

std::string ChatTemplate::bos_text() const {
  switch (format_) {
    case ChatFormat::Llama3:
    case ChatFormat::Llama31:
    case ChatFormat::Llama2:
    case ChatFormat::Mistral:
      return bos_;
    default:
      return "";
  }
}

void ChatTemplate::check_messages(std::span<const ChatMessage> messages) const {
  const std::string where = source_ + ": chat template (" + name_ + "): ";
  if (messages.empty()) throw Error(where + "no messages to render");
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw Error(where + "message " + std::to_string(i) + " has role \"" + r +
                  "\" (supported: system, user, assistant)");
  }
}

std::vector<ChatSegment> ChatTemplate::render(std::span<const ChatMessage> messages, bool gen) const {
  check_messages(messages);
  if (!engine_) return render_by_hand(messages, gen);
  const std::string where = source_ + ": chat template (" + name_ + "): ";
  const std::string whole = render_with_engine(messages, gen);
  std::vector<AssistantMessage> assistants;
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].role == "assistant") assistants.push_back({i, messages[i].content});
  std::vector<TextSpan> spans;
  try {
    spans = assistant_spans(
        whole, assistants, [&](size_t n, bool prompt) { return render_with_engine(messages.first(n), prompt); },
        stop_strings());
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(where)) throw;  // the template's own error
    throw Error(where + e.what());
  }
  Segments out;
  size_t at = 0;
  for (const auto& span : spans) {
    out.add(std::string_view(whole).substr(at, span.begin - at));
    out.add(std::string_view(whole).substr(span.begin, span.end - span.begin), true);
    at = span.end;
  }
  out.add(std::string_view(whole).substr(at));
  return out.list;
}

std::string ChatTemplate::render_with_engine(std::span<const ChatMessage> messages, bool gen) const {
  ChatTemplateCall call;
  jinja::List list;
  for (const auto& m : messages) {
    jinja::Dict d;
    d.set(jinja::Value("role"), jinja::Value(m.role));
    d.set(jinja::Value("content"), jinja::Value(m.content));
    list.emplace_back(std::move(d));
  }
  call.messages = jinja::Value(std::move(list));
  call.add_generation_prompt = gen;
  if (!bos_.empty()) call.special_tokens.emplace_back("bos_token", bos_);
  if (!eos_.empty()) call.special_tokens.emplace_back("eos_token", eos_);
  call.special_tokens.insert(call.special_tokens.end(), other_tokens_.begin(), other_tokens_.end());
  if (enable_thinking_set_) call.extra.set(jinja::Value("enable_thinking"), jinja::Value(enable_thinking_));
  if (!date_string_.empty()) call.extra.set(jinja::Value("date_string"), jinja::Value(date_string_));
  try {
    return apply_chat_template(*engine_, call);
  } catch (const jinja::TemplateError& e) {
    throw Error(source_ + ": chat template (" + name_ + "): " + e.message() + " (line " + std::to_string(e.line()) +
                ", column " + std::to_string(e.column()) + " of the template)");
  }
}

std::vector<ChatSegment> ChatTemplate::render_by_hand(std::span<const ChatMessage> messages, bool gen) const {
  const std::string where = source_ + ": chat template (" + name_ + "): ";
  const bool has_system = messages[0].role == "system";
  // Llama 2 and Mistral: after the optional first system message, user and assistant alternate.
  auto check_alternation = [&](std::span<const ChatMessage> loop, const std::string& message) {
    for (size_t k = 0; k < loop.size(); ++k)
      if ((loop[k].role == "user") != (k % 2 == 0))
        throw Error(where + message + " (message " + std::to_string(k + messages.size() - loop.size()) + " is " +
                    loop[k].role + ")");
  };
  Segments out;
  switch (format_) {
    case ChatFormat::ChatML:
    case ChatFormat::ChatMLQwen25: {
      if (format_ == ChatFormat::ChatMLQwen25 && !has_system)
        out.add("<|im_start|>system\n" + default_system_ + "<|im_end|>\n");
      for (const auto& m : messages) {
        out.add("<|im_start|>" + m.role + "\n");
        const bool assistant = m.role == "assistant";
        out.add(m.content + "<|im_end|>", assistant);
        out.add("\n");
      }
      if (gen) out.add("<|im_start|>assistant\n");
      break;
    }
    case ChatFormat::ChatMLQwen3: {
      // The last user message that is not a tool response wrapped in <tool_response> tags.
      size_t last_query = messages.size() - 1;
      for (size_t i = messages.size(); i-- > 0;) {
        const auto& c = messages[i].content;
        if (messages[i].role == "user" && !(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) {
          last_query = i;
          break;
        }
      }
      for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (m.role != "assistant") {
          out.add("<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n");
          continue;
        }
        const Thought t = split_think(m.content);
        out.add("<|im_start|>assistant\n");
        if (i > last_query && (i + 1 == messages.size() || !t.reasoning.empty()))
          out.add(
              "<think>\n" + py_strip(t.reasoning, "\n") + "\n</think>\n\n" + py_lstrip(t.answer, "\n") + "<|im_end|>",
              true);
        else
          out.add(t.answer + "<|im_end|>", true);
        out.add("\n");
      }
      if (gen) out.add(enable_thinking_ ? "<|im_start|>assistant\n" : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
      break;
    }
    case ChatFormat::Llama3:
    case ChatFormat::Llama31: {
      size_t first = 0;
      if (format_ == ChatFormat::Llama31) {
        const std::string date = !date_string_.empty()          ? date_string_
                                 : variant_ == Variant::llama32 ? today()
                                                                : "26 Jul 2024";
        out.add(bos_ +
                "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
                date + "\n\n" + (has_system ? py_strip(messages[0].content) : "") + "<|eot_id|>");
        first = has_system ? 1 : 0;
      }
      for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        out.add((format_ == ChatFormat::Llama3 && i == 0 ? bos_ : "") + "<|start_header_id|>" + m.role +
                "<|end_header_id|>\n\n");
        out.add(py_strip(m.content) + "<|eot_id|>", m.role == "assistant");
      }
      if (gen || variant_ == Variant::llama3_always_prompt)
        out.add("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    }
    case ChatFormat::Llama2: {
      const auto loop = messages.subspan(has_system ? 1 : 0);
      check_alternation(loop, "Conversation roles must alternate user/assistant/user/assistant/...");
      for (size_t k = 0; k < loop.size(); ++k) {
        const auto& m = loop[k];
        const std::string content =
            k == 0 && has_system ? "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + m.content : m.content;
        if (m.role == "user")
          out.add(bos_ + "[INST] " + py_strip(content) + " [/INST]");
        else if (m.role == "assistant")
          out.add(" " + py_strip(content) + " " + eos_, true);
        // (a system message at an odd place passes the alternation check and renders nothing)
      }
      break;
    }
    case ChatFormat::Mistral: {
      const bool system_first = variant_ != Variant::mistral_legacy && has_system;
      const auto loop = messages.subspan(system_first ? 1 : 0);
      check_alternation(loop, variant_ == Variant::mistral_legacy
                                  ? "Conversation roles must alternate user/assistant/user/assistant/..."
                                  : "After the optional system message, conversation roles must alternate "
                                    "user/assistant/user/assistant/...");
      out.add(bos_);
      for (size_t k = 0; k < loop.size(); ++k) {
        const auto& m = loop[k];
        if (m.role == "system")
          throw Error(where +
                      (variant_ == Variant::mistral_legacy
                           ? "Only user and assistant roles are supported!"
                           : "Only user and assistant roles are supported, with the exception of an initial "
                             "optional system message!") +
                      " (message " + std::to_string(k + messages.size() - loop.size()) + ")");
        const bool user = m.role == "user";
        switch (variant_) {
          case Variant::mistral_legacy:
            if (user)
              out.add("[INST] " + m.content + " [/INST]");
            else
              out.add(m.content + eos_, true);
            break;
          case Variant::mistral_system:
            if (user)
              out.add(" [INST] " + (k == 0 && system_first ? messages[0].content + "\n\n" : "") + m.content +
                      " [/INST]");
            else
              out.add(" " + m.content + eos_, true);
            break;
          default:  // v0.3: the system message goes before the last message when that is a user one
            if (user)
              out.add("[INST] " + (k + 1 == loop.size() && system_first ? messages[0].content + "\n\n" : "") +
                      m.content + "[/INST]");
            else
              out.add(" " + py_strip(m.content) + eos_, true);
        }
      }
      break;
    }
    case ChatFormat::Zephyr: {
      for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        out.add("<|" + m.role + "|>\n");
        out.add(m.content + (variant_ == Variant::phi3 ? std::string("<|end|>") : eos_), m.role == "assistant");
        out.add("\n");
        if (i + 1 == messages.size() && gen) out.add("<|assistant|>\n");
      }
      break;
    }
  }
  return out.list;
}

std::string ChatTemplate::render_text(std::span<const ChatMessage> messages, bool gen) const {
  if (engine_) {
    check_messages(messages);
    return render_with_engine(messages, gen);
  }
  std::string s;
  for (const auto& seg : render(messages, gen)) s += seg.text;
  return s;
}

}  // namespace ls::tok
