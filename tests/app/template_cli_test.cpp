// `lorastudio template`: the rendered text on stdout byte for byte as jinja2 set up as transformers renders
// it (nothing added), the model folder's special tokens, --tools, --var, --template-name; a template's
// error on stderr in one line with exit code 1.
#include <gtest/gtest.h>

#include "app/run_app.h"
#include "tokenizer/model_chat_template.h"
#include "tokenizer/python_jinja.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using test::OrderedJson;

class TemplateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_template_cli_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }

  fs::path dir_;
};

const OrderedJson kMessages = OrderedJson::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Weather in Paris? 東京 too"},
  {"role": "assistant", "content": "", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
  {"role": "tool", "content": "21 C"},
  {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 21 °C."}])");
const OrderedJson kTools = OrderedJson::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

TEST_F(TemplateCli, PrintsWhatTransformersRenders) {
  const auto messages = write("messages.json", kMessages.dump()), tools = write("tools.json", kTools.dump());
  for (const char* model : {"qwen3", "llama3_2", "gemma3"}) {
    const fs::path folder = test::tokenizer_dir(model);
    ASSERT_TRUE(fs::exists(folder / "tokenizer_config.json")) << "run scripts/fetch_tokenizers.sh";
    const auto m = tok::read_model_chat_template(folder / "tokenizer_config.json");
    OrderedJson variables = {
        {"messages", kMessages}, {"tools", kTools}, {"documents", nullptr}, {"add_generation_prompt", true}};
    for (const auto& [k, v] : m.special_tokens) variables[k] = v;
    variables["enable_thinking"] = false;
    variables["date_string"] = "26 Jul 2024";
    OrderedJson jobs = OrderedJson::array();
    jobs.push_back({{"template", m.jinja}, {"variables", variables}});
    const auto expected = test::render_with_python(jobs);
    ASSERT_EQ(expected.size(), 1u);
    const auto r = test::run_app({"template", "--model", folder.string(), "--messages", messages.string(), "--tools",
                                  tools.string(), "--add-generation-prompt", "--var", "enable_thinking=false", "--var",
                                  "date_string=\"26 Jul 2024\""});
    if (expected[0].ok) {
      EXPECT_EQ(r.code, 0) << model << ": " << r.err;
      EXPECT_EQ(r.out, expected[0].text) << model;
      EXPECT_EQ(r.err, "");
    } else {  // gemma3 refuses the tool role
      EXPECT_EQ(r.code, 1) << model;
      EXPECT_EQ(r.out, "");
      EXPECT_NE(r.err.find(expected[0].error), std::string::npos) << model << ": " << r.err;
    }
  }
}

TEST_F(TemplateCli, TemplateFileVariablesAndErrors) {
  const auto messages = write("messages.json", R"({"messages": [{"role": "user", "content": "hi"}], "tools": [1]})");
  const auto t = write("t.jinja", "{{ bos_token }}{{ messages[0].content }}|{{ tools }}|{{ x }}\n");
  auto r = test::run_app({"template", "--template", t.string(), "--messages", messages.string(), "--var",
                          "x=[1.0, null]", "--var", "bos_token=\"<B>\""});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<B>hi|[1]|[1.0, None]");  // the template's one trailing newline is dropped, as by jinja2

  const auto raising =
      write("raise.jinja", "line one\n{{ raise_exception('Roles must alternate: ' ~ messages | length) }}");
  r = test::run_app({"template", "--template", raising.string(), "--messages", messages.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "lorastudio: " + raising.string() + ":2:4: Roles must alternate: 1\n");

  const auto broken = write("broken.jinja", "ok\n{% for m in messages %}{{ m.role }");
  r = test::run_app({"template", "--template", broken.string(), "--messages", messages.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(broken.string() + ":2:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;

  r = test::run_app({"template", "--template", t.string(), "--messages", messages.string(), "--var", "x=not json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--var x=not json: the value is not JSON"), std::string::npos) << r.err;

  r = test::run_app({"template", "--template", t.string(), "--model", dir_.string(), "--messages", messages.string()});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(TemplateCli, NamedTemplatesOfAModelFolder) {
  const auto messages = write("messages.json", R"([{"role": "user", "content": "hi"}])");
  write("tokenizer_config.json", R"({"chat_template": [{"name": "default", "template": "D:{{ messages[0].content }}"},
    {"name": "tool_use", "template": "T:{{ eos_token }}"}], "eos_token": {"content": "</s>", "lstrip": false}})");
  auto r = test::run_app({"template", "--model", dir_.string(), "--messages", messages.string()});
  EXPECT_EQ(r.out, "D:hi") << r.err;
  r = test::run_app(
      {"template", "--model", dir_.string(), "--messages", messages.string(), "--template-name", "tool_use"});
  EXPECT_EQ(r.out, "T:</s>") << r.err;
  r = test::run_app({"template", "--model", dir_.string(), "--messages", messages.string(), "--template-name", "rag"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("without one named \"rag\" (default, tool_use)"), std::string::npos) << r.err;
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  r = test::run_app({"template", "--model", dir_.string(), "--messages", messages.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ls
