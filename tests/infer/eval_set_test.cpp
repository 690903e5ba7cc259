// Evaluation sets (infer/eval_set.h): the held-out records are exactly the lines train::load_dataset holds out for
// the same options (bad lines skipped, a validation file instead of a fraction); records become prompts as
// `generate --prompts` documents them; replies come batched with their stop reasons, stop strings cut, a cancel
// ends the run; the rows are written whole or not at all, with errors naming the file.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "error.h"
#include "infer/eval_set.h"
#include "model/config.h"
#include "model/weights.h"
#include "support/testing.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(LS_SOURCE_DIR) / "tests/fixtures/models/qwen2_tiny";

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ls_eval_set_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// n chat lines "question i" / "answer i", with a broken line after the third.
fs::path write_data(const fs::path& dir, size_t n, bool with_bad_line) {
  const fs::path p = dir / "data.jsonl";
  std::ofstream f(p);
  for (size_t i = 0; i < n; ++i) {
    f << R"({"messages": [{"role": "user", "content": "question )" << i
      << R"("}, {"role": "assistant", "content": "answer )" << i << R"("}]})" << "\n";
    if (with_bad_line && i == 2) f << "{not json\n";
  }
  return p;
}

const infer::ChatModelFiles& files() {
  static const auto f = infer::ChatModelFiles::load(kModel, model::load_config(kModel));
  return f;
}

TEST(EvalSet, HeldOutRecordsAreTheLinesTrainingHeldOut) {
  const fs::path dir = temp_dir("held_out");
  const fs::path data = write_data(dir, 20, true);
  for (uint64_t seed : {0u, 7u}) {
    train::DatasetOptions o{.max_seq_len = 256, .seed = seed, .validation_fraction = 0.25, .skip_bad_lines = true};
    const auto d = train::load_dataset(data, files().tokenizer, files().chat, o);
    std::vector<size_t> expected;
    for (const auto& e : d.validation) expected.push_back(e.line);
    ASSERT_EQ(d.train_examples + d.validation_examples, 20u) << "the bad line skipped, every other example kept";
    ASSERT_EQ(expected.size(), 5u);
    const auto held = infer::held_out_records(data, files().tokenizer, files().chat, o);
    std::vector<size_t> lines;
    for (const auto& r : held) lines.push_back(r.line);
    EXPECT_EQ(lines, expected) << "seed " << seed;
    for (const auto& r : held) {
      ASSERT_EQ(r.kind, train::RecordKind::messages);
      // The file's line r.line is "question i" with i = line - 1 before the bad line (line 4), line - 2 after.
      const size_t i = r.line <= 3 ? r.line - 1 : r.line - 2;
      EXPECT_EQ(r.messages[0].content, "question " + std::to_string(i));
    }
  }
  // Packing changes rows, not which examples are held out.
  train::DatasetOptions packed{.max_seq_len = 256, .pack = true, .seed = 3, .validation_fraction = 0.3, .skip_bad_lines = true};
  auto unpacked = packed;
  unpacked.pack = false;
  const auto a = infer::held_out_records(data, files().tokenizer, files().chat, packed);
  const auto b = infer::held_out_records(data, files().tokenizer, files().chat, unpacked);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].line, b[i].line);
}

TEST(EvalSet, ValidationFileIsHeldOutWhole) {
  const fs::path dir = temp_dir("val_file");
  const fs::path data = write_data(dir, 6, false);
  fs::create_directories(dir / "v");
  const fs::path val = write_data(dir / "v", 4, false);
  train::DatasetOptions o{.max_seq_len = 256, .validation_file = val};
  const auto held = infer::held_out_records(data, files().tokenizer, files().chat, o);
  ASSERT_EQ(held.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(held[i].line, i + 1);
  test::expect_error_naming([&] { infer::held_out_records(data, files().tokenizer, files().chat, {.max_seq_len = 256}); },
                            "no examples are held out");
}

TEST(EvalSet, RecordsBecomePrompts) {
  auto chat = train::parse_record(
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}]})",
      "f:1");
  chat.line = 1;
  const auto p = infer::eval_prompt(chat, files(), "f:1");
  EXPECT_EQ(p.reference, "Hello.");
  EXPECT_EQ(p.shown, "Hi?");
  EXPECT_TRUE(p.chat);
  const std::vector<tok::ChatMessage> before = {{"system", "Be brief."}, {"user", "Hi?"}};
  EXPECT_EQ(p.ids, files().tokenizer.encode(files().chat.render_text(before, true), false));

  auto pc = train::parse_record(R"({"prompt": "2+2=", "completion": "4"})", "f:2");
  const auto q = infer::eval_prompt(pc, files(), "f:2");
  EXPECT_EQ(q.reference, "4");
  EXPECT_EQ(q.shown, "2+2=");
  EXPECT_FALSE(q.chat);
  EXPECT_EQ(q.ids, files().tokenizer.encode("2+2=", true));

  auto text = train::parse_record(R"({"text": "Once upon"})", "f:3");
  const auto t = infer::eval_prompt(text, files(), "f:3");
  EXPECT_TRUE(t.reference.empty());
  EXPECT_EQ(t.ids, files().tokenizer.encode("Once upon", true));

  auto only_answer = train::parse_record(R"({"messages": [{"role": "assistant", "content": "x"}]})", "f:4");
  test::expect_error_naming([&] { infer::eval_prompt(only_answer, files(), "f:4"); }, "f:4: the conversation has only");
}

TEST(EvalSet, RowsAreWrittenWholeOrNotAtAll) {
  const fs::path dir = temp_dir("write");
  std::vector<infer::EvalRow> rows = {
      {.line = 3, .prompt = "p", .reference = "r", .prompt_tokens = 5,
       .reply = {.text = "a\xff", .new_tokens = 2, .stop = "eos"}, .base = {.text = "b", .new_tokens = 7, .stop = "max tokens"}},
      {.line = 9, .prompt = "q", .prompt_tokens = 4, .reply = {.text = "c", .new_tokens = 1, .stop = "stop string"}}};
  const fs::path out = dir / "eval.jsonl";
  infer::write_eval_jsonl(rows, true, out);
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  std::ifstream in(out);
  std::string line;
  std::vector<nlohmann::json> j;
  while (std::getline(in, line)) j.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["line"], 3);
  EXPECT_EQ(j[0]["reference"], "r");
  EXPECT_EQ(j[0]["reply"], "a\xef\xbf\xbd");  // invalid UTF-8 replaced, never a throw
  EXPECT_EQ(j[0]["base_reply"], "b");
  EXPECT_EQ(j[0]["base_stop"], "max tokens");
  EXPECT_FALSE(j[1].contains("reference"));
  EXPECT_EQ(j[1]["stop"], "stop string");
  EXPECT_EQ(j[1]["new_tokens"], 1);

  test::expect_error_naming([&] { infer::write_eval_jsonl(rows, false, dir / "missing" / "eval.jsonl"); },
                            (dir / "missing" / "eval.jsonl.partial").string() + ": cannot be written");
}

class EvalReplies : public test::GpuTest {};

TEST_F(EvalReplies, BatchedRepliesEqualOneAtATimeAndCancelEnds) {
  const auto m = model::Model::load(dev(), kModel);
  std::vector<infer::EvalPrompt> prompts;
  for (const char* q : {"What is 2+2?", "Name a colour.", "Say hi."}) {
    train::Record r{.kind = train::RecordKind::messages, .messages = {{"user", q}}, .line = prompts.size() + 1};
    prompts.push_back(infer::eval_prompt(r, files(), "x"));
  }
  const infer::GenerateOptions options{.max_new_tokens = 12, .stop_ids = files().eos};
  std::vector<size_t> order;
  infer::EvalSideStats stats;
  const auto batched = infer::generate_replies(dev(), m, nullptr, files(), {.context = 256}, options, {}, prompts, 2,
                                               [&](size_t i, const infer::EvalReply&) { order.push_back(i); }, {}, &stats);
  ASSERT_EQ(batched.size(), 3u);
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), 3u) << "each reply reported once";
  EXPECT_EQ(stats.batch.prompts, 3u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = infer::generate_replies(dev(), m, nullptr, files(), {.context = 256}, options, {},
                                               {prompts[i]}, 1, {}, {}, nullptr);
    EXPECT_EQ(batched[i].text, alone[0].text) << i;
    EXPECT_EQ(batched[i].new_tokens, alone[0].new_tokens) << i;
    EXPECT_LE(batched[i].new_tokens, 12u);
    EXPECT_TRUE(batched[i].stop == "eos" || batched[i].stop == "max tokens" || batched[i].stop == "stop string")
        << batched[i].stop;
  }
  // A stop string cuts the reply where it appears (the reply's own text, so the test does not depend on the weights).
  size_t at = 1;
  while (at < batched[0].text.size() && !std::isalnum(static_cast<unsigned char>(batched[0].text[at]))) ++at;
  if (at < batched[0].text.size()) {
    const std::string cut = batched[0].text.substr(at, 1);
    const auto stopped = infer::generate_replies(dev(), m, nullptr, files(), {.context = 256}, options, {cut},
                                                 {prompts[0]}, 1, {}, {}, nullptr);
    EXPECT_EQ(stopped[0].stop, "stop string");
    EXPECT_EQ(stopped[0].text.find(cut), std::string::npos);
  }
  int asked = 0;
  EXPECT_THROW(infer::generate_replies(dev(), m, nullptr, files(), {.context = 256}, options, {}, prompts, 2, {},
                                       [&] { return ++asked > 3; }, nullptr),
               infer::EvalCancelled);
  EXPECT_EQ(asked, 4);
}

}  // namespace
}  // namespace ls
