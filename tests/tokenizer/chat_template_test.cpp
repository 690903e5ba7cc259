// Chat templates against transformers' apply_chat_template (tests/fixtures/chat_rendered.json, made by
// tests/fixtures/make_tokenizer_fixtures.py --chat): the Qwen3 and Llama 3 templates of the real
// tokenizer_config.json files and a Qwen2.5-style template with its default system prompt, over ten
// conversations with and without the generation prompt. The rendering must be identical, byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "error.h"
#include "tokenizer/chat_template.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

std::vector<tok::ChatMessage> messages_of(const nlohmann::json& j) {
  std::vector<tok::ChatMessage> m;
  for (const auto& x : j) m.push_back({x.at("role"), x.at("content")});
  return m;
}

nlohmann::json fixture() {
  std::ifstream in(fs::path(LS_SOURCE_DIR) / "tests/fixtures/chat_rendered.json");
  return nlohmann::json::parse(in);
}

TEST(ChatTemplate, RendersExactlyAsTransformers) {
  const auto f = fixture();
  const std::map<std::string, tok::ChatFormat> formats = {
      {"qwen3", tok::ChatFormat::ChatMLQwen3}, {"llama3", tok::ChatFormat::Llama3}, {"qwen25", tok::ChatFormat::ChatMLQwen25}};
  size_t checked = 0;
  for (const auto& [name, t] : f.at("templates").items()) {
    std::vector<std::string> warnings;
    auto tmpl = tok::ChatTemplate::recognise(t.at("jinja").get<std::string>(), name, &warnings);
    EXPECT_TRUE(warnings.empty()) << name;
    EXPECT_EQ(tmpl.format(), formats.at(name)) << name;
    for (const auto& r : t.at("renderings")) {
      auto msgs = messages_of(r.at("messages"));
      const bool gen = r.at("add_generation_prompt");
      EXPECT_EQ(tmpl.render_text(msgs, gen), r.at("text").get<std::string>()) << name << " " << r.at("messages").dump()
                                                                              << " gen " << gen;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 60u);  // 3 templates x 10 conversations x with/without the generation prompt
}

TEST(ChatTemplate, SegmentsConcatenateAndMarkAssistantContent) {
  auto tmpl = tok::ChatTemplate::recognise("{{ '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
                                           "helpful assistant.<|im_end|>\\n' }}",
                                           "t", nullptr);
  ASSERT_EQ(tmpl.format(), tok::ChatFormat::ChatMLQwen25);
  std::vector<tok::ChatMessage> m = {{"user", "hi"}, {"assistant", "hello"}, {"user", "bye"}, {"assistant", "ciao"}};
  auto segs = tmpl.render(m, false);
  std::string all, trained;
  for (const auto& s : segs) {
    all += s.text;
    if (s.trainable) trained += s.text + "|";
  }
  EXPECT_EQ(all, tmpl.render_text(m, false));
  EXPECT_EQ(trained, "hello<|im_end|>|ciao<|im_end|>|");
  EXPECT_NE(all.find("You are Qwen, created by Alibaba Cloud."), std::string::npos);

  auto llama = tok::ChatTemplate::recognise("<|start_header_id|>{{ add_generation_prompt }}", "t", nullptr);
  trained.clear();
  for (const auto& s : llama.render(m, false))
    if (s.trainable) trained += s.text + "|";
  EXPECT_EQ(trained, "hello<|eot_id|>|ciao<|eot_id|>|");
}

TEST(ChatTemplate, UnknownTemplateFallsBackToChatMLWithWarning) {
  std::vector<std::string> warnings;
  auto t = tok::ChatTemplate::recognise("{{ messages[0]['content'] }}", "model/tokenizer_config.json", &warnings);
  EXPECT_EQ(t.format(), tok::ChatFormat::ChatML);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("model/tokenizer_config.json"), std::string::npos);
  std::vector<tok::ChatMessage> m = {{"user", "hi"}};
  EXPECT_EQ(t.render_text(m, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, OtherFamilies) {
  std::vector<tok::ChatMessage> m = {{"system", "S"}, {"user", " u1 "}, {"assistant", "a1"}, {"user", "u2"}};
  auto l2 = tok::ChatTemplate::recognise("[INST] <<SYS>>", "t", nullptr);
  // (Llama 2 strips the user content after prefixing the system block: the inner space stays.)
  EXPECT_EQ(l2.render_text(m, true), "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\n u1 [/INST] a1 </s><s>[INST] u2 [/INST]");
  auto mistral = tok::ChatTemplate::recognise("[INST]", "t", nullptr);
  EXPECT_THROW(mistral.render_text(m, true), Error);
  std::vector<tok::ChatMessage> m2(m.begin() + 1, m.end());
  EXPECT_EQ(mistral.render_text(m2, true), "<s>[INST]  u1  [/INST]a1</s>[INST] u2 [/INST]");
  auto l31 = tok::ChatTemplate::recognise("<|start_header_id|> Cutting Knowledge Date add_generation_prompt", "t", nullptr);
  EXPECT_EQ(l31.render_text(m, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nu1<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\na1<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "u2<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, BadInput) {
  auto t = tok::ChatTemplate::recognise("<|im_start|>", "t", nullptr);
  std::vector<tok::ChatMessage> bad_role = {{"robot", "x"}};
  EXPECT_THROW(t.render_text(bad_role, true), Error);
  std::vector<tok::ChatMessage> late_system = {{"user", "x"}, {"system", "y"}};
  EXPECT_THROW(t.render_text(late_system, true), Error);
  auto dir = fs::temp_directory_path() / "ls_chat_template_test";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << "{ not json";
  try {
    tok::ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json", nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ls
