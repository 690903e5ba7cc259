// Chat templates. tests/fixtures/chat_rendered.json holds the renderings of the real templates of
// tests/fixtures/chat_templates/ over 20 conversations, with and without the generation prompt, made by
// transformers' apply_chat_template (make_chat_fixtures.py) or its stand-in (make_chat_fixtures_node.mjs,
// the generator is recorded in the file); ours must be identical byte for byte, and must throw where the
// template raises. The rest: trainable segments per family, recognition and its warnings,
// tokenizer_config.json handling and its errors, Python's strip, the Jinja literal reader.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "error.h"
#include "tokenizer/jinja_source.h"
#include "tokenizer/py_str.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using tok::ChatFormat;
using tok::ChatMessage;
using tok::ChatTemplate;

const fs::path kFixtures = fs::path(LS_SOURCE_DIR) / "tests/fixtures";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_file(p)); }

ChatFormat format_named(const std::string& name) {
  static const std::map<std::string, ChatFormat> kFormats = {{"ChatMLQwen25", ChatFormat::ChatMLQwen25},
                                                             {"ChatMLQwen3", ChatFormat::ChatMLQwen3},
                                                             {"ChatML", ChatFormat::ChatML},
                                                             {"Llama3", ChatFormat::Llama3},
                                                             {"Llama31", ChatFormat::Llama31},
                                                             {"Llama2", ChatFormat::Llama2},
                                                             {"Mistral", ChatFormat::Mistral},
                                                             {"Zephyr", ChatFormat::Zephyr}};
  return kFormats.at(name);
}

std::vector<ChatMessage> messages_of(const nlohmann::json& j) {
  std::vector<ChatMessage> m;
  for (const auto& x : j) m.push_back({x.at("role"), x.at("content")});
  return m;
}

ChatTemplate template_of(const std::string& jinja, const std::string& source = "t") {
  return ChatTemplate::recognise(jinja, source, nullptr);
}
ChatTemplate fixture_template(const std::string& file) {
  return template_of(read_file(kFixtures / "chat_templates" / file), file);
}

// The trainable segments' texts, joined with '|'.
std::string trainable(const ChatTemplate& t, std::span<const ChatMessage> m, bool gen = false) {
  std::string s;
  for (const auto& seg : t.render(m, gen))
    if (seg.trainable) s += seg.text + "|";
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Both ways a template renders: its family by hand (recognise(), the fallback), and the template itself
// run by the Jinja engine (from_jinja(), what a model folder with a template gets).
enum class Way { by_hand, engine };
ChatTemplate make_template(const std::string& jinja, const std::string& source, Way way,
                           std::vector<std::string>* warnings = nullptr) {
  return way == Way::engine ? ChatTemplate::from_jinja(jinja, source, warnings)
                            : ChatTemplate::recognise(jinja, source, warnings);
}

class ChatTemplateBothWays : public ::testing::TestWithParam<Way> {};
INSTANTIATE_TEST_SUITE_P(Ways, ChatTemplateBothWays, ::testing::Values(Way::by_hand, Way::engine),
                         [](const auto& way) { return way.param == Way::engine ? "Engine" : "ByHand"; });

TEST_P(ChatTemplateBothWays, RendersExactlyAsTransformers) {
  const auto f = read_json(kFixtures / "chat_rendered.json");
  std::cout << "chat_rendered.json: " << f.at("generator").get<std::string>() << "\n";
  size_t checked = 0, errors = 0;
  for (const auto& t : f.at("templates")) {
    const std::string id = t.at("id"), file = t.at("file");
    std::vector<std::string> warnings;
    auto tmpl = make_template(t.at("jinja").get<std::string>(), file, GetParam(), &warnings);
    EXPECT_TRUE(warnings.empty()) << id << ": " << (warnings.empty() ? "" : warnings[0]);
    EXPECT_EQ(tmpl.format(), format_named(t.at("format"))) << id;
    EXPECT_EQ(tmpl.runs_model_template(), GetParam() == Way::engine) << id;
    EXPECT_EQ(tmpl.name(), t.at("name").get<std::string>()) << id;
    if (t.at("bos_token").is_string()) tmpl.set_bos_token(t.at("bos_token"));
    if (t.at("eos_token").is_string()) tmpl.set_eos_token(t.at("eos_token"));
    for (const auto& [key, value] : t.at("kwargs").items()) {
      if (key == "date_string")
        tmpl.set_date_string(value);
      else if (key == "enable_thinking")
        tmpl.set_enable_thinking(value);
      else
        FAIL() << id << ": kwarg " << key << " has no setter";
    }
    for (const auto& r : t.at("renderings")) {
      const auto msgs = messages_of(f.at("conversations").at(r.at("conversation").get<size_t>()));
      const bool gen = r.at("add_generation_prompt");
      const std::string what =
          id + " conversation " + std::to_string(r.at("conversation").get<int>()) + (gen ? " +generation prompt" : "");
      ++checked;
      if (r.contains("error")) {
        ++errors;
        const std::string e = error_of([&] { tmpl.render(msgs, gen); });
        EXPECT_NE(e.find(file), std::string::npos) << what << " (template raises \"" << r.at("error") << "\"): " << e;
        continue;
      }
      std::vector<tok::ChatSegment> segments;
      EXPECT_NO_THROW(segments = tmpl.render(msgs, gen)) << what << ": " << error_of([&] { tmpl.render(msgs, gen); });
      std::string joined;
      for (const auto& s : segments) joined += s.text;
      EXPECT_EQ(joined, r.at("text").get<std::string>()) << what;
      EXPECT_EQ(tmpl.render_text(msgs, gen), joined) << what;
    }
  }
  EXPECT_EQ(checked, 600u);  // 15 template/kwargs sets x 20 conversations x with/without the prompt
  EXPECT_EQ(errors, 32u);    // Llama 2 and Mistral refusing a late system message, user after user, ...
}

TEST(ChatTemplate, KnownTemplatesAreRecognisedWithoutWarning) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(kFixtures / "chat_templates")) {
    if (e.path().extension() != ".jinja") continue;
    const std::string text = read_file(e.path());
    std::vector<std::string> warnings;
    auto t = ChatTemplate::recognise(text, e.path().filename().string(), &warnings);
    EXPECT_TRUE(t.known_text()) << e.path().filename() << ": fingerprint 0x" << std::hex
                                << ChatTemplate::fingerprint(text) << " is not in kKnownTemplates";
    EXPECT_TRUE(warnings.empty()) << e.path().filename();
    ++n;
  }
  EXPECT_EQ(n, 13u);
}

// One conversation through every family: the trainable text is each assistant answer and its end of turn,
// the same whether the family is rendered by hand or the template runs (its turns found from prefixes).
TEST_P(ChatTemplateBothWays, TrainableSegmentsAreAssistantContentAndEndOfTurn) {
  auto fixture_template = [&](const std::string& file) {
    return make_template(read_file(kFixtures / "chat_templates" / file), file, GetParam());
  };
  const std::vector<ChatMessage> m = {
      {"system", "S"}, {"user", "u1"}, {"assistant", " a1 "}, {"user", "u2"}, {"assistant", "a2"}};
  EXPECT_EQ(trainable(fixture_template("chatml.jinja"), m), " a1 <|im_end|>|a2<|im_end|>|");
  EXPECT_EQ(trainable(fixture_template("qwen2.5-instruct.jinja"), m), " a1 <|im_end|>|a2<|im_end|>|");
  EXPECT_EQ(trainable(fixture_template("qwen3.jinja"), m), " a1 <|im_end|>|<think>\n\n</think>\n\na2<|im_end|>|");
  EXPECT_EQ(trainable(fixture_template("llama3-instruct.jinja"), m), "a1<|eot_id|>|a2<|eot_id|>|");
  EXPECT_EQ(trainable(fixture_template("llama3.1-instruct.jinja"), m), "a1<|eot_id|>|a2<|eot_id|>|");
  EXPECT_EQ(trainable(fixture_template("llama2-chat.jinja"), m), " a1 </s>| a2 </s>|");
  EXPECT_EQ(trainable(fixture_template("mistral-instruct-system.jinja"), m), "  a1 </s>| a2</s>|");
  EXPECT_EQ(trainable(fixture_template("mistral-instruct-v0.3.jinja"), m), " a1</s>| a2</s>|");
  EXPECT_EQ(trainable(fixture_template("zephyr.jinja"), m), " a1 </s>|a2</s>|");
  const std::vector<ChatMessage> no_system(m.begin() + 1, m.end());
  EXPECT_EQ(trainable(fixture_template("mistral-instruct-legacy.jinja"), no_system), " a1 </s>|a2</s>|");
  // Qwen3 keeps the reasoning of an answer after the last user message, drops it before.
  const std::vector<ChatMessage> thinking = {{"user", "q1"},
                                             {"assistant", "<think>r1</think>a1"},
                                             {"user", "q2"},
                                             {"assistant", "<think>\nr2\n</think>\n\na2"}};
  EXPECT_EQ(trainable(fixture_template("qwen3.jinja"), thinking),
            "a1<|im_end|>|<think>\nr2\n</think>\n\na2<|im_end|>|");
  // Nothing is trainable in a prompt, and the generation prompt never is.
  const std::vector<ChatMessage> prompt = {{"user", "hi"}};
  for (const char* file :
       {"chatml.jinja", "qwen3.jinja", "llama3.2-instruct.jinja", "llama2-chat.jinja", "zephyr.jinja"})
    EXPECT_EQ(trainable(fixture_template(file), prompt, true), "") << file;
}

TEST(ChatTemplate, UnknownTemplateFallsBackToChatMLWithWarning) {
  std::vector<std::string> warnings;
  auto t = ChatTemplate::recognise("{{ messages[0]['content'] }}", "model/tokenizer_config.json", &warnings);
  EXPECT_EQ(t.format(), ChatFormat::ChatML);
  EXPECT_FALSE(t.known_text());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("model/tokenizer_config.json"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("not recognised"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("may differ"), std::string::npos) << warnings[0];
  const std::vector<ChatMessage> m = {{"user", "hi"}};
  EXPECT_EQ(t.render_text(m, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

  warnings.clear();
  ChatTemplate::recognise("", "empty/tokenizer_config.json", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("empty/tokenizer_config.json: no chat template"), std::string::npos) << warnings[0];

  // A template of a known family but not a known text (here Qwen2.5's with one more space) renders as
  // its family, with a warning.
  warnings.clear();
  std::string text = read_file(kFixtures / "chat_templates/qwen2.5-instruct.jinja");
  text.insert(text.find("{%- for message"), " ");
  auto q = ChatTemplate::recognise(text, "edited.jinja", &warnings);
  EXPECT_EQ(q.format(), ChatFormat::ChatMLQwen25);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(
      warnings[0].find("edited.jinja: chat template is not one of the known texts; rendering it as ChatML (Qwen2.5)"),
      std::string::npos)
      << warnings[0];
}

TEST(ChatTemplate, DefaultSystemPromptIsReadFromTheTemplate) {
  auto t = template_of(
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
      "You\\'re \"X\" \\u00e9\\\\<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}");
  ASSERT_EQ(t.format(), ChatFormat::ChatMLQwen25);
  EXPECT_EQ(t.name(), "ChatML (default system prompt)");
  const std::vector<ChatMessage> m = {{"user", "hi"}};
  EXPECT_EQ(t.render_text(m, false),
            "<|im_start|>system\nYou're \"X\" \xC3\xA9\\<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatTemplate, OptionsStopStringsAndBos) {
  const std::vector<ChatMessage> m = {{"user", "hi"}};
  auto l32 = fixture_template("llama3.2-instruct.jinja");
  const std::string text = l32.render_text(m, true);
  EXPECT_TRUE(std::regex_search(text, std::regex("Today Date: [0-3][0-9] [A-Z][a-z][a-z] 20[0-9][0-9]\n"))) << text;
  l32.set_date_string("01 Feb 2030");
  EXPECT_NE(l32.render_text(m, true).find("Today Date: 01 Feb 2030\n"), std::string::npos);
  EXPECT_NE(fixture_template("llama3.1-instruct.jinja").render_text(m, true).find("Today Date: 26 Jul 2024\n"),
            std::string::npos);

  auto q3 = fixture_template("qwen3.jinja");
  q3.set_enable_thinking(false);
  EXPECT_EQ(q3.render_text(m, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");

  EXPECT_EQ(fixture_template("qwen3.jinja").stop_strings(), (std::vector<std::string>{"<|im_end|>", "<|endoftext|>"}));
  EXPECT_EQ(fixture_template("llama3-instruct.jinja").stop_strings(),
            (std::vector<std::string>{"<|eot_id|>", "<|end_of_text|>"}));
  EXPECT_EQ(fixture_template("llama2-chat.jinja").stop_strings(), (std::vector<std::string>{"</s>"}));
  EXPECT_EQ(fixture_template("zephyr.jinja").stop_strings(), (std::vector<std::string>{"</s>"}));
  EXPECT_EQ(fixture_template("chatml.jinja").bos_text(), "");
  EXPECT_EQ(fixture_template("zephyr.jinja").bos_text(), "");
  EXPECT_EQ(fixture_template("llama3.1-instruct.jinja").bos_text(), "<|begin_of_text|>");
  EXPECT_EQ(fixture_template("mistral-instruct-v0.3.jinja").bos_text(), "<s>");
  for (const char* file :
       {"llama3-instruct.jinja", "llama3.1-instruct.jinja", "llama2-chat.jinja", "mistral-instruct-legacy.jinja"}) {
    auto t = fixture_template(file);
    EXPECT_TRUE(t.render_text(m, true).starts_with(t.bos_text())) << file;
  }
}

TEST(ChatTemplate, RefusedConversationsNameTheSource) {
  auto chatml = fixture_template("chatml.jinja");
  const std::vector<ChatMessage> robot = {{"user", "x"}, {"robot", "y"}};
  EXPECT_NE(error_of([&] {
              chatml.render(robot, true);
            }).find("chatml.jinja: chat template (ChatML): message 1 has role \"robot\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { chatml.render({}, true); }).find("chatml.jinja: chat template (ChatML): no messages"),
            std::string::npos);
  // A system message later in the conversation: ChatML renders it, Llama 2 and Mistral refuse it.
  const std::vector<ChatMessage> late = {{"user", "x"}, {"assistant", "y"}, {"system", "z"}, {"user", "w"}};
  EXPECT_NE(chatml.render_text(late, true).find("<|im_start|>system\nz<|im_end|>\n"), std::string::npos);
  EXPECT_NE(error_of([&] {
              fixture_template("llama2-chat.jinja").render(late, true);
            }).find("llama2-chat.jinja: chat template (Llama 2): Conversation roles must alternate"),
            std::string::npos);
  const std::vector<ChatMessage> late_odd = {{"user", "x"}, {"system", "z"}};
  EXPECT_NE(error_of([&] {
              fixture_template("mistral-instruct-v0.3.jinja").render(late_odd, true);
            }).find("Only user and assistant roles are supported"),
            std::string::npos);
}

TEST(ChatTemplate, FromTokenizerConfig) {
  const fs::path dir = fs::temp_directory_path() / "ls_chat_template_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path config = dir / "tokenizer_config.json";
  auto write = [](const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; };
  auto load = [&](std::vector<std::string>* w = nullptr) { return ChatTemplate::from_tokenizer_config(config, w); };
  auto load_error = [&] { return error_of([&] { load(); }); };

  EXPECT_NE(load_error().find(config.string() + ": cannot open"), std::string::npos);
  write(config, "{ not json");
  EXPECT_NE(load_error().find(config.string() + ": not valid JSON"), std::string::npos) << load_error();
  write(config, "[1, 2]");
  EXPECT_NE(load_error().find(config.string() + ": expected a JSON object"), std::string::npos) << load_error();
  write(config, R"({"chat_template": 7})");
  EXPECT_NE(load_error().find(config.string() + ": \"chat_template\" is number"), std::string::npos) << load_error();
  write(config, R"({"chat_template": [{"name": "tool_use", "template": "x"}]})");
  EXPECT_NE(load_error().find("lists templates without a \"default\" one (tool_use)"), std::string::npos)
      << load_error();
  write(config, R"({"chat_template": [{"name": "default"}]})");
  EXPECT_NE(load_error().find("\"chat_template\"[0]: expected {\"name\": string, \"template\": string}"),
            std::string::npos)
      << load_error();
  write(config, R"({"chat_template": "[INST]", "bos_token": 3})");
  EXPECT_NE(load_error().find("\"bos_token\" is number"), std::string::npos) << load_error();

  std::vector<std::string> warnings;
  write(config, R"({"eos_token": "</s>"})");
  EXPECT_EQ(load(&warnings).format(), ChatFormat::ChatML);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(config.string() + ": no chat template"), std::string::npos) << warnings[0];

  // A list of named templates: the default one; tokens as AddedToken objects.
  nlohmann::json j = {{"chat_template",
                       {{{"name", "default"}, {"template", read_file(kFixtures / "chat_templates/llama2-chat.jinja")}},
                        {{"name", "rag"}, {"template", "x"}}}},
                      {"bos_token", {{"__type", "AddedToken"}, {"content", "<B>"}}},
                      {"eos_token", "<E>"}};
  write(config, j.dump());
  warnings.clear();
  auto l2 = load(&warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(l2.format(), ChatFormat::Llama2);
  const std::vector<ChatMessage> m = {{"user", "a"}, {"assistant", "b"}};
  EXPECT_EQ(l2.render_text(m, false), "<B>[INST] a [/INST] b <E>");
  EXPECT_EQ(l2.stop_strings(), (std::vector<std::string>{"<E>"}));

  // chat_template.jinja beside the config takes precedence, as in transformers.
  write(dir / "chat_template.jinja", read_file(kFixtures / "chat_templates/zephyr.jinja"));
  warnings.clear();
  EXPECT_EQ(load(&warnings).format(), ChatFormat::Zephyr);
  EXPECT_TRUE(warnings.empty());
  fs::remove_all(dir);
}

// Phi-3's template (Phi-3-mini-4k-instruct's text) has Zephyr's turn headers but closes each turn with <|end|>:
// named Phi-3 (it was shown as "Zephyr"), <|end|> is a stop string whatever the eos token, and the family
// rendered by hand gives what the template gives.
TEST(ChatTemplate, Phi3IsNamedAndStopsAtEnd) {
  const std::string jinja =
      "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + "
      "'<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif "
      "message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor "
      "%}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";
  ChatTemplate hand = template_of(jinja);
  EXPECT_EQ(hand.format(), ChatFormat::Zephyr);
  EXPECT_EQ(hand.name(), "Phi-3");
  hand.set_eos_token("<|endoftext|>");  // as Phi-3-mini's tokenizer_config.json says
  const std::vector<std::string> stops = hand.stop_strings();
  EXPECT_NE(std::find(stops.begin(), stops.end(), "<|end|>"), stops.end());
  const std::vector<ChatMessage> m = {{"system", "s"}, {"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  EXPECT_EQ(hand.render_text(m, true), "<|system|>\ns<|end|>\n<|user|>\na<|end|>\n<|assistant|>\nb<|end|>\n<|user|>\nc<|end|>\n<|assistant|>\n");
  ChatTemplate model = ChatTemplate::from_jinja(jinja, "t", nullptr);
  model.set_eos_token("<|endoftext|>");
  EXPECT_TRUE(model.runs_model_template());
  EXPECT_EQ(model.name(), "Phi-3");
  EXPECT_EQ(model.render_text(m, true), hand.render_text(m, true));
}

TEST(PyStr, StripsPythonWhitespace) {
  // Python: "\x1c\x1f\x85\xa0\u3000 x \u2028\u202f".strip() == "x"; U+200B and U+FEFF are not whitespace.
  EXPECT_EQ(tok::py_strip("\x1c\x1f\xC2\x85\xC2\xA0\xE3\x80\x80 x \xE2\x80\xA8\xE2\x80\xAF"), "x");
  EXPECT_EQ(tok::py_strip("\xE2\x80\x8Bx\xEF\xBB\xBF"), "\xE2\x80\x8Bx\xEF\xBB\xBF");
  EXPECT_EQ(tok::py_strip(" \t\n\r\v\f"), "");
  EXPECT_EQ(tok::py_lstrip("  a  "), "a  ");
  EXPECT_EQ(tok::py_rstrip("  a  "), "  a");
  EXPECT_EQ(tok::py_rstrip("a\xF0\x9F\x98\x80 "), "a\xF0\x9F\x98\x80");
  EXPECT_EQ(tok::py_strip(" \xFF \x80 "), "\xFF \x80");  // invalid UTF-8 stays
  EXPECT_EQ(tok::py_lstrip("\n \nx\n", "\n"), " \nx\n");
  EXPECT_EQ(tok::py_strip("\n\n", "\n"), "");
}

TEST(JinjaSource, ReadsLiteralsAndFingerprintsIgnoreQuoting) {
  auto s = tok::scan_jinja(R"(a 'b' {{ 'x\ny' + "q\"\\" }}{# 'c' #}{% if z == '\u00e9\x41' %}{% endif %} 'd')");
  EXPECT_EQ(s.literals, (std::vector<std::string>{"x\ny", "q\"\\",
                                                  "\xC3\xA9"
                                                  "A"}));
  EXPECT_EQ(tok::scan_jinja("{{ 'a\\nb' }}").fingerprint, tok::scan_jinja("{{ \"a\nb\" }}").fingerprint);
  EXPECT_NE(tok::scan_jinja("{{ 'a\\nb' }}").fingerprint, tok::scan_jinja("{{ 'a\\tb' }}").fingerprint);
  EXPECT_NE(tok::scan_jinja("{{ 'ab' }}").fingerprint, tok::scan_jinja("{{ 'ab' }} ").fingerprint);
  // Unterminated pieces end with the source.
  EXPECT_EQ(tok::scan_jinja("{{ 'abc").literals, (std::vector<std::string>{"abc"}));
  EXPECT_TRUE(tok::scan_jinja("{% if").literals.empty());
}

}  // namespace
}  // namespace ls
