// Training data: JSONL lines (every malformed case names file:line and the problem; every cut of a valid
// line parses or throws ls::Error; skip_bad_lines), each format's ids and loss mask on the tiny Qwen2
// and Llama fixtures' tokenizers (the trained tokens decode to exactly the completion / assistant
// content + end-of-turn), truncation, the seeded validation split, packing, parallel tokenizing, and a
// batch's targets. With the real tokenizers: for Qwen3 and Llama 3, segment-wise chat encoding equals
// encoding the whole rendering on ordinary conversations, and where it cannot (content starting with
// newlines) only at the boundary; for Llama 2 (SentencePiece-style) the whole text's ids are used.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>

#include <unistd.h>

#include "error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/batcher.h"
#include "train/dataset.h"
#include "train/example.h"
#include "train/jsonl.h"

namespace ls {
namespace {

namespace fs = std::filesystem;
using train::Example;

fs::path fixture_model(const char* name) { return fs::path(LS_SOURCE_DIR) / "tests/fixtures/models" / name; }

fs::path real_tokenizer(const std::string& name) {
  auto dir = fs::path(LS_SOURCE_DIR) / ".cache/tokenizers" / name;
  if (!fs::exists(dir / "tokenizer.json"))
    ADD_FAILURE() << dir << " is missing: run scripts/fetch_tokenizers.sh (scripts/test.sh does)";
  return dir;
}

struct Model {
  tok::Tokenizer tokenizer;
  tok::ChatTemplate chat;
  explicit Model(const fs::path& dir)
      : tokenizer(tok::Tokenizer::load(dir)), chat(tok::ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json", nullptr)) {}
};

// Real tokenizers load in about a second each: once per process.
const Model* real_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> loaded;
  auto& m = loaded[name];
  if (!m) {
    const auto dir = real_tokenizer(name);
    if (!fs::exists(dir / "tokenizer.json")) return nullptr;
    m = std::make_unique<Model>(dir);
  }
  return m.get();
}

const Model& qwen_tiny() {
  static const Model m(fixture_model("qwen2_tiny"));
  return m;
}

// A scratch folder per test.
class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ls_dataset_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& content) {
    auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  train::Dataset load(const fs::path& path, const train::DatasetOptions& o = {}) {
    return train::load_dataset(path, qwen_tiny().tokenizer, qwen_tiny().chat, o);
  }
  // The what() of the ls::Error that loading `content` throws ("" and a failure if none).
  std::string error_of(const std::string& content, const train::DatasetOptions& o = {}) {
    auto path = write("bad.jsonl", content);
    try {
      load(path, o);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for: " << content;
    return "";
  }

  fs::path dir_;
};

std::string decode_where(const tok::Tokenizer& tok, const Example& e, bool trained) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < e.ids.size(); ++i)
    if (bool(e.trained[i]) == trained) ids.push_back(e.ids[i]);
  return tok.decode(ids);
}

size_t common_prefix_size(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return size_t(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---------------------------------------------------------------------------------------------------
// JSONL errors

TEST_F(DatasetTest, EveryMalformedLineNamesFileLineAndProblem) {
  const std::string good = R"({"text": "fine"})";
  struct Case {
    std::string line, problem;
  };
  const std::vector<Case> cases = {
      {R"({"text": "unterminated)", "not valid JSON"},
      {R"({"text": "a"} trailing)", "not valid JSON"},
      {"{\"text\": \"bad \xff utf-8\"}", "not valid JSON"},
      {R"(["text", "a"])", "expected a JSON object, got array"},
      {R"("just a string")", "expected a JSON object, got string"},
      {"42", "expected a JSON object, got number"},
      {R"({"txt": "a"})", "no \"text\", \"prompt\"/\"completion\" or \"messages\" key"},
      {R"({})", "no \"text\""},
      {R"({"text": "a", "messages": []})", "more than one format"},
      {R"({"text": "a", "prompt": "p", "completion": "c"})", "more than one format"},
      {R"({"prompt": "p"})", "has \"prompt\" but no \"completion\""},
      {R"({"completion": "c"})", "has \"completion\" but no \"prompt\""},
      {R"({"text": 5})", "\"text\" must be a string, got number"},
      {R"({"text": null})", "\"text\" must be a string, got null"},
      {R"({"prompt": ["p"], "completion": "c"})", "\"prompt\" must be a string, got array"},
      {R"({"prompt": "p", "completion": {}})", "\"completion\" must be a string, got object"},
      {R"({"messages": "hi"})", "\"messages\" must be an array, got string"},
      {R"({"messages": ["hi"]})", "messages[0] must be an object, got string"},
      {R"({"messages": [{"role": "user"}]})", "messages[0] has no \"content\""},
      {R"({"messages": [{"content": "x"}]})", "messages[0] has no \"role\""},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": 1, "content": "y"}]})",
       "messages[1].role must be a string, got number"},
      {R"({"messages": [{"role": "user", "content": null}]})", "messages[0].content must be a string, got null"},
      {R"({"text": ""})", "\"text\" is empty"},
      {R"({"prompt": "p", "completion": ""})", "\"completion\" is empty"},
      {R"({"messages": []})", "\"messages\" is empty"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]})",
       "messages[1].role \"tool\" is not one of system, user, assistant"},
      {R"({"messages": [{"role": "user", "content": "hi"}]})", "no trained token (the conversation has no assistant message)"},
      // (A system message after the first is rendered, as the ChatML and Llama 3 templates do: not an error.)
  };
  for (const auto& c : cases) {
    // The bad line is line 3 (a good line and a blank line before it, a good one after).
    const std::string what = error_of(good + "\n\n" + c.line + "\n" + good + "\n");
    const std::string at = (dir_ / "bad.jsonl").string() + ":3: ";
    EXPECT_NE(what.find(at), std::string::npos) << "line: " << c.line << "\nerror: " << what;
    EXPECT_NE(what.find(c.problem), std::string::npos) << "line: " << c.line << "\nerror: " << what << "\nwant: " << c.problem;
  }
}

TEST(Jsonl, EveryCutOfAValidLineParsesOrThrowsLsError) {
  const std::string line =
      R"({"messages": [{"role": "system", "content": "s\u00e9"}, {"role": "user", "content": "u"}, )"
      R"({"role": "assistant", "content": "a\n\"q\""}], "prompt_id": [1, 2.5, null, true]})";
  size_t parsed = 0;
  for (size_t n = 0; n <= line.size(); ++n) {
    try {
      train::parse_record(std::string_view(line).substr(0, n), "f.jsonl:1");
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("f.jsonl:1: ", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(parsed, 1u);  // only the whole line
  const auto r = train::parse_record(line, "f.jsonl:1");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].content, "s\xc3\xa9");
  EXPECT_EQ(r.messages[2].content, "a\n\"q\"");
}

TEST_F(DatasetTest, NoTrainedTokenAfterTruncation) {
  train::DatasetOptions o;
  o.max_seq_len = 4;
  const std::string what = error_of(R"({"prompt": "one two three four five six", "completion": "seven"})", o);
  EXPECT_NE(what.find("bad.jsonl:1: no trained token left after cutting the example to max_seq_len 4"), std::string::npos)
      << what;
}

TEST_F(DatasetTest, FileLevelErrors) {
  try {
    load(dir_ / "missing.jsonl");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.jsonl: cannot open"), std::string::npos) << e.what();
  }
  EXPECT_NE(error_of("\n  \n\t\n").find("bad.jsonl: no usable example (the file has no non-blank line)"), std::string::npos);
  train::DatasetOptions o;
  o.validation_file = dir_ / "valid.jsonl";
  write("valid.jsonl", R"({"text": 1})");
  const std::string what = error_of(R"({"text": "fine"})", o);
  EXPECT_NE(what.find("valid.jsonl:1: \"text\" must be a string"), std::string::npos) << what;
}

TEST_F(DatasetTest, OptionsOutOfRange) {
  auto path = write("d.jsonl", R"({"text": "a"})");
  auto expect_error = [&](train::DatasetOptions o, const std::string& problem) {
    try {
      load(path, o);
      ADD_FAILURE() << "no error for " << problem;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  };
  expect_error({.max_seq_len = 1}, "max_seq_len must be at least 2");
  expect_error({.epochs = 0}, "epochs must be at least 1");
  expect_error({.validation_fraction = 1.0}, "validation_fraction must be in [0, 1)");
  expect_error({.validation_fraction = -0.1}, "validation_fraction must be in [0, 1)");
  expect_error({.validation_file = path, .validation_fraction = 0.1}, "not both");
  expect_error({.validation_fraction = 0.5}, "validation_fraction needs at least 2 examples, the file has 1");
}

TEST_F(DatasetTest, SkipBadLinesListsThemAndKeepsTheRest) {
  const std::string content = "\xEF\xBB\xBF{\"text\": \"first\"}\r\n"   // BOM and CRLF are fine
                              "{\"text\": \n"                            // 2: bad JSON
                              "\n"                                       // 3: blank
                              "{\"prompt\": \"p\", \"completion\": \"c\"}\n"
                              "{\"messages\": [{\"role\": \"user\", \"content\": \"u\"}]}\n"  // 5: nothing trained
                              "[1]\n"                                    // 6: not an object
                              "{\"messages\": [{\"role\": \"user\", \"content\": \"u\"}, {\"role\": \"assistant\", \"content\": \"a\"}]}";
  auto path = write("mixed.jsonl", content);
  train::DatasetOptions o;
  o.skip_bad_lines = true;
  const auto d = load(path, o);
  ASSERT_EQ(d.train.size(), 3u);
  EXPECT_EQ(d.train[0].line, 1u);
  EXPECT_EQ(d.train[1].line, 4u);
  EXPECT_EQ(d.train[2].line, 7u);
  EXPECT_EQ(d.skipped_lines, 3u);
  ASSERT_EQ(d.warnings.size(), 3u);
  EXPECT_NE(d.warnings[0].find(path.string() + ":2: not valid JSON"), std::string::npos) << d.warnings[0];
  EXPECT_NE(d.warnings[1].find(path.string() + ":5: no trained token"), std::string::npos) << d.warnings[1];
  EXPECT_NE(d.warnings[2].find(path.string() + ":6: expected a JSON object"), std::string::npos) << d.warnings[2];
  EXPECT_EQ(qwen_tiny().tokenizer.decode(d.train[0].ids), "first<|im_end|>");  // BOM and CR gone

  // Without the option the first bad line throws; with it, a file of bad lines still throws.
  EXPECT_NE(error_of(content).find("bad.jsonl:2: not valid JSON"), std::string::npos);
  const std::string what = error_of("{\"text\": 1}\nnope\n", o);
  EXPECT_NE(what.find("bad.jsonl: no usable example (2 bad lines; the first: "), std::string::npos) << what;
  EXPECT_NE(what.find("bad.jsonl:1: \"text\" must be a string"), std::string::npos) << what;
}

// ---------------------------------------------------------------------------------------------------
// Formats and masks (qwen2_tiny: no BOS, EOS = pad = <|im_end|> 617, <|im_start|> 616)

TEST_F(DatasetTest, TextIsAllTrainedAndEndsWithEos) {
  const auto& tok = qwen_tiny().tokenizer;
  ASSERT_EQ(tok.eos_id(), 617);
  const auto d = load(write("t.jsonl", R"({"text": "Hello world, this is text."})" "\n"
                                       R"({"text": "ends with eos<|im_end|>"})"));
  ASSERT_EQ(d.train.size(), 2u);
  const auto& e = d.train[0];
  EXPECT_EQ(e.ids, concat(tok.encode("Hello world, this is text.", true), {617}));
  std::vector<uint8_t> want(e.ids.size(), 1);
  want[0] = 0;  // the first token is never a target
  EXPECT_EQ(e.trained, want);
  EXPECT_EQ(tok.decode(e.ids), "Hello world, this is text.<|im_end|>");
  // A text that already ends with EOS gets no second one.
  EXPECT_EQ(d.train[1].ids, tok.encode("ends with eos<|im_end|>", true));
  EXPECT_EQ(d.train[1].ids.back(), 617);
}

TEST_F(DatasetTest, PromptCompletionTrainsTheCompletionAndEos) {
  const auto& tok = qwen_tiny().tokenizer;
  auto path = write("pc.jsonl", R"({"prompt": "What is 2+2?", "completion": " It is 4.", "id": 7})");
  const auto d = load(path);
  ASSERT_EQ(d.train.size(), 1u);
  const auto& e = d.train[0];
  const auto prompt = tok.encode("What is 2+2?", true), completion = tok.encode(" It is 4.", false);
  EXPECT_EQ(e.ids, concat(concat(prompt, completion), {617}));
  std::vector<uint8_t> want(prompt.size(), 0);
  want.resize(e.ids.size(), 1);
  EXPECT_EQ(e.trained, want);
  EXPECT_EQ(decode_where(tok, e, true), " It is 4.<|im_end|>");
  EXPECT_EQ(decode_where(tok, e, false), "What is 2+2?");

  train::DatasetOptions o;
  o.train_on_prompt = true;
  const auto all = load(path, o);
  EXPECT_EQ(all.train[0].ids, e.ids);
  EXPECT_EQ(train::trained_count(all.train[0]), e.ids.size() - 1);
  EXPECT_EQ(all.train[0].trained[0], 0);
}

TEST_F(DatasetTest, MessagesTrainTheAssistantTurnsWithImEnd) {
  const auto& m = qwen_tiny();
  auto path = write("chat.jsonl",
                    R"({"messages": [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello! How can I help?"}]})" "\n"
                    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},)"
                    R"( {"role": "assistant", "content": "4"}, {"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "6, of course."}]})");
  const auto d = load(path);
  ASSERT_EQ(d.train.size(), 2u);
  ASSERT_EQ(m.chat.format(), tok::ChatFormat::ChatMLQwen25);

  // One turn, with the template's default system prompt.
  const auto& a = d.train[0];
  EXPECT_EQ(decode_where(m.tokenizer, a, true), "Hello! How can I help?<|im_end|>");
  EXPECT_EQ(decode_where(m.tokenizer, a, false),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n\n");
  const std::string rendered =
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n";
  EXPECT_EQ(a.ids, m.tokenizer.encode(rendered, false));
  // The mask is one run: the assistant content and <|im_end|>, then the final "\n" untrained.
  const auto content = m.tokenizer.encode("Hello! How can I help?<|im_end|>", false);
  const size_t start = m.tokenizer.encode(rendered.substr(0, rendered.find("Hello!")), false).size();
  std::vector<uint8_t> want(a.ids.size(), 0);
  std::fill(want.begin() + ptrdiff_t(start), want.begin() + ptrdiff_t(start + content.size()), 1);
  EXPECT_EQ(a.trained, want);
  EXPECT_EQ(a.ids[start + content.size() - 1], 617);

  // Two assistant turns, own system prompt.
  EXPECT_EQ(decode_where(m.tokenizer, d.train[1], true), "4<|im_end|>6, of course.<|im_end|>");
  EXPECT_EQ(m.tokenizer.decode(d.train[1].ids),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n6, of course.<|im_end|>\n");

  train::DatasetOptions o;
  o.train_on_prompt = true;
  const auto all = load(path, o);
  EXPECT_EQ(all.train[0].ids, a.ids);
  EXPECT_EQ(train::trained_count(all.train[0]), a.ids.size() - 1);
}

TEST_F(DatasetTest, MessagesOnLlamaTinyTrainContentAndEotId) {
  const Model m(fixture_model("llama_tiny"));
  ASSERT_EQ(m.chat.format(), tok::ChatFormat::Llama3);
  auto path = write("chat.jsonl",
                    R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "  Hello.  "}]})" "\n"
                    R"({"prompt": "Q", "completion": "A"})");
  const auto d = train::load_dataset(path, m.tokenizer, m.chat, {});
  ASSERT_EQ(d.train.size(), 2u);
  EXPECT_EQ(decode_where(m.tokenizer, d.train[0], true), "Hello.<|eot_id|>");  // the template strips the content
  EXPECT_EQ(m.tokenizer.decode(d.train[0].ids),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>");
  EXPECT_EQ(decode_where(m.tokenizer, d.train[1], true), "A<|eot_id|>");
}

// ---------------------------------------------------------------------------------------------------
// Truncation, validation split, packing

TEST_F(DatasetTest, LongExamplesAreCutAtTheEndAndCounted) {
  const auto& tok = qwen_tiny().tokenizer;
  const std::string long_text = "one two three four five six seven eight nine ten eleven twelve";
  auto path = write("t.jsonl", R"({"text": ")" + long_text + R"("})" "\n" R"({"text": "short"})");
  const auto full = tok.encode(long_text, true);
  ASSERT_GT(full.size(), 10u);
  train::DatasetOptions o;
  o.max_seq_len = 8;
  const auto d = load(path, o);
  ASSERT_EQ(d.train.size(), 2u);
  EXPECT_EQ(d.train[0].ids, std::vector<int32_t>(full.begin(), full.begin() + 8));
  EXPECT_EQ(d.train[0].trained.size(), 8u);
  EXPECT_EQ(d.truncated, 1u);
  EXPECT_EQ(d.longest, full.size() + 1);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("t.jsonl: 1 of 2 examples are longer than max_seq_len 8 tokens and were cut at the end"),
            std::string::npos)
      << d.warnings[0];
  EXPECT_EQ(d.train[1].ids, concat(tok.encode("short", true), {617}));
}

std::string numbered_texts(size_t n) {
  std::string s;
  for (size_t i = 1; i <= n; ++i) s += R"({"text": "line )" + std::to_string(i) + R"("})" "\n";
  return s;
}

std::vector<size_t> lines_of(const std::vector<Example>& rows) {
  std::vector<size_t> lines;
  for (const auto& r : rows) lines.push_back(r.line);
  return lines;
}

TEST_F(DatasetTest, ValidationFractionIsSeededAndKeepsFileOrder) {
  auto path = write("d.jsonl", numbered_texts(10));
  train::DatasetOptions o;
  o.validation_fraction = 0.25;  // round(2.5) = 3 (llround rounds halves away from zero)
  o.seed = 42;
  const auto d = load(path, o);
  EXPECT_EQ(d.train_examples, 7u);
  EXPECT_EQ(d.validation_examples, 3u);
  // Fixed for seed 42 on every platform (train/shuffle.h; checked against an independent Python
  // implementation of mt19937_64 and the same draw).
  EXPECT_EQ(lines_of(d.validation), (std::vector<size_t>{2, 4, 8}));
  EXPECT_EQ(lines_of(d.train), (std::vector<size_t>{1, 3, 5, 6, 7, 9, 10}));
  // The same again; another seed, another choice; the shuffle option does not change the split.
  o.shuffle = false;
  EXPECT_EQ(lines_of(load(path, o).validation), lines_of(d.validation));
  o.seed = 7;
  EXPECT_NE(lines_of(load(path, o).validation), lines_of(d.validation));
  // At least one example on each side.
  o.validation_fraction = 0.01;
  EXPECT_EQ(load(path, o).validation.size(), 1u);
  o.validation_fraction = 0.99;
  EXPECT_EQ(load(path, o).train.size(), 1u);
}

TEST_F(DatasetTest, ValidationFile) {
  train::DatasetOptions o;
  o.validation_file = write("valid.jsonl", R"({"prompt": "p", "completion": "c"})");
  const auto d = load(write("train.jsonl", numbered_texts(3)), o);
  EXPECT_EQ(d.train.size(), 3u);
  ASSERT_EQ(d.validation.size(), 1u);
  EXPECT_EQ(decode_where(qwen_tiny().tokenizer, d.validation[0], true), "c<|im_end|>");
}

TEST_F(DatasetTest, PackingAppendsWholeExamplesWhileTheyFit) {
  const auto& tok = qwen_tiny().tokenizer;
  auto path = write("d.jsonl", numbered_texts(9));
  const auto one = load(path);  // unpacked, for the expected contents
  size_t len = one.train[0].ids.size();
  for (const auto& e : one.train) ASSERT_EQ(e.ids.size(), len) << "the test wants examples of one length";
  train::DatasetOptions o;
  o.pack = true;
  o.shuffle = false;
  o.max_seq_len = uint32_t(3 * len + 1);  // three per row, the fourth does not fit
  const auto d = load(path, o);
  EXPECT_EQ(d.train_examples, 9u);
  ASSERT_EQ(d.train.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    Example want;
    for (size_t i = 3 * r; i < 3 * r + 3; ++i) {
      want.ids.insert(want.ids.end(), one.train[i].ids.begin(), one.train[i].ids.end());
      want.trained.insert(want.trained.end(), one.train[i].trained.begin(), one.train[i].trained.end());
    }
    EXPECT_EQ(d.train[r].ids, want.ids) << "row " << r;
    EXPECT_EQ(d.train[r].trained, want.trained) << "row " << r;  // each example's first token untrained
    EXPECT_EQ(d.train[r].line, 3 * r + 1);
  }
  EXPECT_EQ(tok.decode(d.train[1].ids), "line 4<|im_end|>line 5<|im_end|>line 6<|im_end|>");
  EXPECT_EQ(train::token_count(d.train), train::token_count(one.train));
  EXPECT_EQ(train::trained_count(d.train), train::trained_count(one.train));

  // Shuffled packing: a seeded order, every example once, rows within max_seq_len.
  o.shuffle = true;
  o.seed = 3;
  const auto s = load(path, o);
  const auto again = load(path, o);
  std::vector<std::string> texts;
  for (size_t r = 0; r < s.train.size(); ++r) {
    EXPECT_LE(s.train[r].ids.size(), o.max_seq_len);
    EXPECT_EQ(s.train[r].ids, again.train[r].ids);
    texts.push_back(tok.decode(s.train[r].ids));
  }
  EXPECT_EQ(train::token_count(s.train), train::token_count(one.train));
  EXPECT_NE(texts[0], "line 1<|im_end|>line 2<|im_end|>line 3<|im_end|>");

  // An example that does not fit the current row starts a new one.
  auto mixed = write("m.jsonl", R"({"text": "a"})" "\n" R"({"text": "one two three four five six"})" "\n" R"({"text": "b"})");
  o.shuffle = false;
  o.max_seq_len = 6;
  const auto m = load(mixed, o);
  ASSERT_EQ(m.train.size(), 3u);
  EXPECT_EQ(tok.decode(m.train[0].ids), "a<|im_end|>");
  auto long_ids = tok.encode("one two three four five six", true);
  long_ids.resize(6);
  EXPECT_EQ(m.train[1].ids, long_ids);  // cut to 6; then "b" does not fit beside it
  EXPECT_EQ(tok.decode(m.train[2].ids), "b<|im_end|>");
  EXPECT_EQ(m.truncated, 1u);
}

TEST_F(DatasetTest, ParallelTokenizingGivesTheSameExamplesAndTheFirstError) {
  std::string content;
  for (int i = 0; i < 300; ++i)
    content += i % 3 == 0 ? R"({"text": "number )" + std::to_string(i) + R"("})" "\n"
               : i % 3 == 1 ? R"({"prompt": "p)" + std::to_string(i) + R"(", "completion": "c"})" "\n"
                            : R"({"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a)" +
                                  std::to_string(i) + R"("}]})" "\n";
  auto path = write("many.jsonl", content);
  train::DatasetOptions one, four;
  one.threads = 1;
  four.threads = 4;
  const auto a = load(path, one), b = load(path, four);
  ASSERT_EQ(a.train.size(), 300u);
  ASSERT_EQ(b.train.size(), 300u);
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(a.train[i].ids, b.train[i].ids);
    EXPECT_EQ(a.train[i].trained, b.train[i].trained);
    EXPECT_EQ(b.train[i].line, i + 1);
  }
  // Bad lines at 250 and 40: the error is line 40's, whatever thread met which first.
  auto lines = content;
  auto replace_line = [&](size_t n, const std::string& with) {
    size_t at = 0;
    for (size_t k = 1; k < n; ++k) at = lines.find('\n', at) + 1;
    lines.replace(at, lines.find('\n', at) - at, with);
  };
  replace_line(250, R"({"text": 1})");
  replace_line(40, R"({"messages": [{"role": "user", "content": "u"}]})");
  const std::string what = error_of(lines, four);
  EXPECT_NE(what.find("bad.jsonl:40: no trained token"), std::string::npos) << what;
}

TEST_F(DatasetTest, BatchTargetsAreTheTrainedTokens) {
  const auto& tok = qwen_tiny().tokenizer;
  EXPECT_EQ(train::pad_token(tok), 617);  // pad_token <|im_end|>
  auto path = write("d.jsonl", R"({"prompt": "Name a colour.", "completion": " Blue."})" "\n"
                               R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]})" "\n"
                               R"({"text": "Some plain text."})");
  train::DatasetOptions o;
  o.shuffle = false;
  o.epochs = 1;
  const auto d = load(path, o);
  const uint32_t T = train::fixed_seq_len(d.train, o.max_seq_len);
  EXPECT_EQ(T, 64u);
  train::Batcher batcher(d.train, train::training_batches(o, 4, T, train::pad_token(tok)));
  const auto batch = batcher.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->rows, 3u);
  EXPECT_EQ(batch->trained_tokens, train::trained_count(d.train));
  std::vector<std::string> want = {" Blue.<|im_end|>", "Hello!<|im_end|>", "ome plain text.<|im_end|>"};
  for (uint32_t r = 0; r < 3; ++r) {
    std::vector<int32_t> targets;
    for (uint32_t t = 0; t < T; ++t)
      if (int32_t id = batch->targets[r * T + t]; id != train::kIgnoreIndex) targets.push_back(id);
    EXPECT_EQ(tok.decode(targets), want[r]) << "row " << r;  // (the first token is never a target)
  }
  EXPECT_EQ(batch->ids[3 * T], 617);  // the padding row
}

// ---------------------------------------------------------------------------------------------------
// Real tokenizers: segment-wise encoding against encoding the whole rendering

train::Example encode_chat(const tok::Tokenizer& tok, const tok::ChatTemplate& chat, const std::vector<tok::ChatMessage>& c) {
  train::Record r{.kind = train::RecordKind::messages, .messages = c, .line = 1};
  return train::encode_example(r, tok, chat, false);
}

std::string trainable_text(const tok::ChatTemplate& chat, const std::vector<tok::ChatMessage>& c) {
  std::string s;
  for (const auto& seg : chat.render(c, false))
    if (seg.trainable) s += seg.text;
  return s;
}

class RealChat : public ::testing::TestWithParam<std::string> {};

TEST_P(RealChat, SegmentsConcatenateToTheWholeEncoding) {
  const Model* model = real_model(GetParam());
  if (!model) return;
  const Model& m = *model;
  const std::vector<std::vector<tok::ChatMessage>> conversations = {
      {{"user", "Hi"}, {"assistant", "Hello! How can I help you today?"}},
      {{"system", "You are a terse assistant."}, {"user", "What is the capital of France?"}, {"assistant", "Paris."}},
      {{"user", "Write a Python hello world."},
       {"assistant", "```python\nprint(\"hello, world\")\n```\n\nRun it with `python3 hello.py`."},
       {"user", "And in C?"},
       {"assistant", "#include <stdio.h>\nint main(void) { puts(\"hello, world\"); }"}},
      {{"user", "Translate: good morning"}, {"assistant", "Bonjour — 早上好 — Guten Morgen 🌅"}},
      {{"user", "List three numbers"}, {"assistant", "1, 2, 3"}, {"user", "More"}, {"assistant", "  4, 5, 6  "}},
      {{"user", "Think first"}, {"assistant", "<think>\nEasy.\n</think>\n\nThe answer is 42."}},
      {{"user", "Say nothing"}, {"assistant", ""}},
  };
  for (const auto& c : conversations) {
    const auto e = encode_chat(m.tokenizer, m.chat, c);
    EXPECT_EQ(e.ids, m.tokenizer.encode(m.chat.render_text(c, false), false)) << GetParam() << ": " << c.back().content;
    EXPECT_EQ(decode_where(m.tokenizer, e, true), trainable_text(m.chat, c)) << GetParam();
  }
  // Assistant content starting with newlines (Qwen3 keeps them in a turn before the last user message;
  // Llama 3 strips them): the header's "\n" and the content's "\n\n" are one pre-token, "\n\n\n", in the
  // whole rendering but two when the segments are encoded apart. The split is kept (example.h); the
  // text is the same.
  const std::vector<tok::ChatMessage> c = {{"user", "Hi"}, {"assistant", "\n\nHello."}, {"user", "Ok"}, {"assistant", "Bye."}};
  const auto e = encode_chat(m.tokenizer, m.chat, c);
  const auto whole = m.tokenizer.encode(m.chat.render_text(c, false), false);
  EXPECT_EQ(m.tokenizer.decode(e.ids), m.tokenizer.decode(whole));
  EXPECT_EQ(decode_where(m.tokenizer, e, true), trainable_text(m.chat, c));
  if (m.chat.format() == tok::ChatFormat::ChatMLQwen3) {
    EXPECT_EQ(e.ids.size(), whole.size() + 1) << "expected the boundary to split \"\\n\\n\\n\"";
    const size_t at = common_prefix_size(e.ids, whole);
    EXPECT_EQ(m.tokenizer.decode(std::vector<int32_t>(e.ids.begin() + ptrdiff_t(at), e.ids.begin() + ptrdiff_t(at + 2))), "\n\n\n");
    EXPECT_EQ(std::vector<int32_t>(e.ids.begin() + ptrdiff_t(at + 2), e.ids.end()),
              std::vector<int32_t>(whole.begin() + ptrdiff_t(at + 1), whole.end()));
  } else {
    EXPECT_EQ(e.ids, whole);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealChat, ::testing::Values("qwen3", "llama3"));

TEST(RealTokenizers, TextGetsTheBosOfThePostProcessor) {
  // Qwen3 has none; this Llama 3 tokenizer.json has a ByteLevel post-processor (no BOS either, as in
  // HF tokenizers on the same file); the Llama 2 one adds <s>.
  for (const char* name : {"qwen3", "llama3", "llama2"}) {
    const Model* model = real_model(name);
    if (!model) return;
    const Model& m = *model;
    train::Record r{.kind = train::RecordKind::text, .text = "Plain text.", .line = 1};
    const auto e = train::encode_example(r, m.tokenizer, m.chat, false);
    EXPECT_EQ(e.ids, concat(m.tokenizer.encode("Plain text.", true), {*m.tokenizer.eos_id()})) << name;
    EXPECT_EQ(e.ids.front() == 1, std::string(name) == "llama2") << name;
  }
}

TEST(RealTokenizers, SentencePieceUsesTheWholeEncoding) {
  // Llama 2's tokenizer prepends "▁" to every text it encodes, so encoding the pieces apart would add
  // a space at each boundary: the whole text's ids are used, with the boundary token trained.
  const Model* m = real_model("llama2");
  if (!m) return;
  const auto& tok = m->tokenizer;
  const int32_t eos = *tok.eos_id();

  train::Record pc{.kind = train::RecordKind::prompt_completion, .prompt = "Question: 2+2?", .completion = " Answer: 4", .line = 1};
  auto e = train::encode_example(pc, tok, m->chat, false);
  EXPECT_EQ(e.ids, concat(tok.encode("Question: 2+2? Answer: 4", true), {eos}));
  EXPECT_EQ(decode_where(tok, e, true), "Answer: 4</s>");  // the decoder strips the first "▁"
  EXPECT_EQ(decode_where(tok, e, false), "<s> Question: 2+2?");
  EXPECT_EQ(tok.token(e.ids[size_t(std::find(e.trained.begin(), e.trained.end(), 1) - e.trained.begin())]), "▁Answer");

  const auto llama2 = tok::ChatTemplate::recognise("[INST] <<SYS>>", "llama2", nullptr);
  const std::vector<tok::ChatMessage> c = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello there."}, {"user", "Bye"}, {"assistant", "Bye!"}};
  e = encode_chat(tok, llama2, c);
  EXPECT_EQ(e.ids, tok.encode(llama2.render_text(c, false), false));
  // Each trained run decodes to the content and " </s>", its space included in "▁Hello".
  std::vector<std::string> runs;
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (!e.trained[i]) continue;
    if (i == 0 || !e.trained[i - 1]) runs.emplace_back();
    runs.back() += tok.token(e.ids[i]);
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"▁Hello▁there.▁</s>", "▁Bye!▁</s>"}));
}

}  // namespace
}  // namespace ls
