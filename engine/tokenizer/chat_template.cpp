#include "tokenizer/chat_template.h"

#include <ctime>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "error.h"

namespace ls::tok {

namespace {

bool has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Jinja's trim / Python's str.strip(): whitespace off both ends.
std::string strip(std::string_view s, std::string_view chars = " \t\n\r\v\f") {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(chars);
  return std::string(s.substr(b, e - b + 1));
}
std::string lstrip(std::string_view s, std::string_view chars) {
  size_t b = s.find_first_not_of(chars);
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b));
}
std::string rstrip(std::string_view s, std::string_view chars) {
  size_t e = s.find_last_not_of(chars);
  return e == std::string_view::npos ? std::string() : std::string(s.substr(0, e + 1));
}

void check_roles(std::span<const ChatMessage> messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw Error("chat template: message " + std::to_string(i) + " has role \"" + r +
                  "\" (supported: system, user, assistant)");
    if (r == "system" && i != 0) throw Error("chat template: a system message must come first");
  }
}

struct Out {
  std::vector<ChatSegment> segs;
  void add(std::string text, bool trainable = false) {
    if (text.empty()) return;
    if (!segs.empty() && segs.back().trainable == trainable) segs.back().text += text;
    else segs.push_back({std::move(text), trainable});
  }
};

std::string today_llama() {  // strftime("%d %b %Y") as transformers' strftime_now gives it
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  return buf;
}

}  // namespace

ChatTemplate ChatTemplate::recognise(std::string_view j, const std::string& source, std::vector<std::string>* warnings) {
  ChatTemplate t;
  if (has(j, "<|im_start|>")) {
    if (has(j, "<think>") && has(j, "reasoning_content")) {
      t.format_ = ChatFormat::ChatMLQwen3;
    } else {
      // A literal default system turn, e.g. '<|im_start|>system\nYou are Qwen, ...<|im_end|>\n'.
      static const std::regex kDefault(R"(<\|im_start\|>system\\n([^'"{}+]+?)<\|im_end\|>)");
      std::match_results<std::string_view::const_iterator> m;
      if (std::regex_search(j.begin(), j.end(), m, kDefault)) {
        t.format_ = ChatFormat::ChatMLQwen25;
        t.default_system_ = m[1].str();
      } else {
        t.format_ = ChatFormat::ChatML;
      }
    }
    return t;
  }
  if (has(j, "<|start_header_id|>")) {
    t.format_ = has(j, "Cutting Knowledge Date") ? ChatFormat::Llama31 : ChatFormat::Llama3;
    t.always_generation_prompt_ = !has(j, "add_generation_prompt");
    t.date_from_clock_ = has(j, "strftime_now");
    return t;
  }
  if (has(j, "[INST]")) {
    t.format_ = has(j, "<<SYS>>") ? ChatFormat::Llama2 : ChatFormat::Mistral;
    return t;
  }
  if (warnings)
    warnings->push_back(source + ": " + (j.empty() ? "no chat template" : "chat template not recognised") +
                        "; using ChatML (<|im_start|>role ... <|im_end|>), which may differ from the model's own");
  return t;
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::filesystem::path& path, std::vector<std::string>* warnings) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
  std::string jinja;
  if (j.is_object() && j.contains("chat_template")) {
    const auto& c = j["chat_template"];
    if (c.is_string()) {
      jinja = c.get<std::string>();
    } else if (c.is_array()) {
      for (const auto& e : c)
        if (e.is_object() && e.value("name", "") == "default") jinja = e.value("template", "");
    }
  } else if (auto jinja_file = path.parent_path() / "chat_template.jinja"; std::filesystem::exists(jinja_file)) {
    std::ifstream f(jinja_file);
    jinja.assign(std::istreambuf_iterator<char>(f), {});
  }
  return recognise(jinja, path.string(), warnings);
}

std::string_view ChatTemplate::name() const {
  switch (format_) {
    case ChatFormat::ChatMLQwen25: return "ChatML (Qwen2.5, default system prompt)";
    case ChatFormat::ChatMLQwen3: return "ChatML (Qwen3)";
    case ChatFormat::ChatML: return "ChatML";
    case ChatFormat::Llama3: return "Llama 3";
    case ChatFormat::Llama31: return "Llama 3.1";
    case ChatFormat::Llama2: return "Llama 2";
    case ChatFormat::Mistral: return "Mistral";
  }
  return "?";
}

std::vector<std::string> ChatTemplate::stop_strings() const {
  switch (format_) {
    case ChatFormat::Llama3:
    case ChatFormat::Llama31: return {"<|eot_id|>", "<|end_of_text|>"};
    case ChatFormat::Llama2:
    case ChatFormat::Mistral: return {"</s>"};
    default: return {"<|im_end|>", "<|endoftext|>"};
  }
}

std::vector<ChatSegment> ChatTemplate::render(std::span<const ChatMessage> messages, bool gen) const {
  check_roles(messages);
  Out out;
  const bool has_system = !messages.empty() && messages[0].role == "system";
  switch (format_) {
    case ChatFormat::ChatMLQwen25:
    case ChatFormat::ChatML: {
      if (format_ == ChatFormat::ChatMLQwen25 && !has_system)
        out.add("<|im_start|>system\n" + default_system_ + "<|im_end|>\n");
      for (const auto& m : messages) {
        out.add("<|im_start|>" + m.role + "\n");
        if (m.role == "assistant") {
          out.add(m.content + "<|im_end|>", true);
          out.add("\n");
        } else {
          out.add(m.content + "<|im_end|>\n");
        }
      }
      if (gen) out.add("<|im_start|>assistant\n");
      break;
    }
    case ChatFormat::ChatMLQwen3: {
      size_t last_query = messages.size() - 1;  // messages|length - 1 when there is no user message
      for (size_t i = messages.size(); i-- > 0;)
        if (messages[i].role == "user") {
          last_query = i;
          break;
        }
      for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (m.role != "assistant") {
          out.add("<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n");
          continue;
        }
        std::string content = m.content, reasoning;
        if (has(m.content, "</think>")) {
          const size_t close = m.content.rfind("</think>");
          content = lstrip(std::string_view(m.content).substr(close + 8), "\n");
          std::string before = rstrip(std::string_view(m.content).substr(0, m.content.find("</think>")), "\n");
          const size_t open = before.rfind("<think>");
          reasoning = lstrip(open == std::string::npos ? before : before.substr(open + 7), "\n");
        }
        const bool last = i + 1 == messages.size();
        out.add("<|im_start|>assistant\n");
        if (i > last_query && (last || !reasoning.empty()))
          out.add("<think>\n" + strip(reasoning, "\n") + "\n</think>\n\n" + lstrip(content, "\n") + "<|im_end|>", true);
        else
          out.add(content + "<|im_end|>", true);
        out.add("\n");
      }
      if (gen) out.add("<|im_start|>assistant\n");
      break;
    }
    case ChatFormat::Llama3:
    case ChatFormat::Llama31: {
      out.add("<|begin_of_text|>");
      size_t first = 0;
      if (format_ == ChatFormat::Llama31) {
        const std::string system = has_system ? strip(messages[0].content) : "";
        first = has_system ? 1 : 0;
        out.add("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
                (date_from_clock_ ? today_llama() : std::string("26 Jul 2024")) + "\n\n" + system + "<|eot_id|>");
      }
      for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        out.add("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n");
        out.add(strip(m.content) + "<|eot_id|>", m.role == "assistant");
      }
      if (gen || always_generation_prompt_) out.add("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    }
    case ChatFormat::Llama2: {
      size_t first = has_system ? 1 : 0;
      for (size_t i = first; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if ((m.role == "user") != ((i - first) % 2 == 0))
          throw Error("chat template (Llama 2): conversation roles must alternate user/assistant/user/...");
        std::string content = m.content;
        if (i == first && has_system) content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + content;
        if (m.role == "user") {
          out.add("<s>[INST] " + strip(content) + " [/INST]");
        } else {
          out.add(" ");
          out.add(strip(content) + " </s>", true);
        }
      }
      break;
    }
    case ChatFormat::Mistral: {
      if (has_system) throw Error("chat template (Mistral): this template has no system role");
      out.add("<s>");
      for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if ((m.role == "user") != (i % 2 == 0))
          throw Error("chat template (Mistral): conversation roles must alternate user/assistant/user/...");
        if (m.role == "user") out.add("[INST] " + m.content + " [/INST]");
        else out.add(m.content + "</s>", true);
      }
      break;
    }
  }
  return out.segs;
}

std::string ChatTemplate::render_text(std::span<const ChatMessage> messages, bool gen) const {
  std::string s;
  for (const auto& seg : render(messages, gen)) s += seg.text;
  return s;
}

}  // namespace ls::tok
