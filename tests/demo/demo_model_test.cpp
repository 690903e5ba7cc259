// The demo model and data (engine/demo): the model is the same bytes whatever the machine (two
// generations are byte-identical, and their CRC-32s are pinned here: a change to the generator, the
// embedded tokenizer or the safetensors writer shows up as a failure, and then needs a new folder
// version), a damaged or incomplete cached folder is found and rebuilt, the model is a Qwen2 model our
// loader and chat template accept with Qwen2.5's tokenizer, and the built-in data set parses with no
// bad line, in the promised shape, with a held-out split disjoint from training.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "demo/demo_assets.h"
#include "demo/demo_data.h"
#include "demo/demo_model.h"
#include "infer/chat_session.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "train/dataset.h"
#include "../model/model_files.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

uint32_t crc_of(const std::string& s) {
  return uint32_t(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(s.data()), uInt(s.size())));
}

const std::vector<std::string> kFiles = {"config.json",    "generation_config.json", "model.safetensors",
                                         "tokenizer.json", "tokenizer_config.json",  "README.md",
                                         "lorastudio-demo.json"};

// Made once for the tests that only read it.
const fs::path& shared_model() {
  static test::TempDir dir;
  static const fs::path model = demo::ensure_demo_model(dir.path()).dir;
  return model;
}

TEST(DemoModel, TwoGenerationsAreByteIdenticalAndPinned) {
  test::TempDir a, b;
  demo::write_demo_model(a.path());
  demo::write_demo_model(b.path());
  for (const auto& f : kFiles) {
    const auto x = test::read_text(a / f), y = test::read_text(b / f);
    ASSERT_FALSE(x.empty()) << f;
    EXPECT_TRUE(x == y) << f << " differs between two generations";
    std::printf("[ demo ] %-24s %9zu bytes  crc32 %08x\n", f.c_str(), x.size(), crc_of(x));
  }
  // The same bytes on every machine: pinned (our generator, no std:: distribution, no libm).
  EXPECT_EQ(crc_of(test::read_text(a / "model.safetensors")), 0xb32bbe30u) << "model.safetensors changed";
  EXPECT_EQ(crc_of(test::read_text(a / "tokenizer.json")), 0x674fe8a4u) << "tokenizer.json changed";
  EXPECT_TRUE(demo::demo_model_intact(a.path()));
}

TEST(DemoModel, DamagedOrIncompleteCacheIsRebuilt) {
  test::TempDir root;
  const auto first = demo::ensure_demo_model(root.path());
  ASSERT_TRUE(first.made);
  EXPECT_EQ(first.dir, root / demo::kDemoModelFolder);
  const std::string weights = test::read_text(first.dir / "model.safetensors");
  EXPECT_FALSE(demo::ensure_demo_model(root.path()).made) << "an intact folder is used as it is";

  auto rebuilt = [&](const char* what) {
    EXPECT_FALSE(demo::demo_model_intact(first.dir)) << what;
    const auto again = demo::ensure_demo_model(root.path());
    EXPECT_TRUE(again.made) << what;
    EXPECT_TRUE(demo::demo_model_intact(again.dir)) << what;
    EXPECT_TRUE(test::read_text(again.dir / "model.safetensors") == weights) << what;
    // Nothing left beside it (temporary or moved-aside folders).
    EXPECT_EQ(std::distance(fs::directory_iterator(root.path()), fs::directory_iterator()), 1) << what;
  };
  {  // one flipped byte in the weights
    std::fstream f(first.dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put(char(weights[1000] ^ 0x40));
  }
  rebuilt("a changed byte");
  fs::resize_file(first.dir / "tokenizer.json", 1000);
  rebuilt("a truncated file");
  fs::remove(first.dir / "tokenizer_config.json");
  rebuilt("a missing file");
  fs::remove(first.dir / "lorastudio-demo.json");
  rebuilt("no stamp (a folder whose making was cut short)");
  std::ofstream(first.dir / "lorastudio-demo.json") << "{\"recipe\": \"demo-model-v0\"}";
  rebuilt("another recipe's stamp");
}

TEST(DemoModel, IsAQwen2ModelWithQwen25sTokenizerAndTemplate) {
  const auto& dir = shared_model();
  const auto c = model::load_config(dir);
  EXPECT_EQ(c.arch, model::Architecture::Qwen2);
  EXPECT_EQ(c.vocab_size, 151936u);
  EXPECT_EQ(c.hidden_size, demo::kDemoShape.hidden);
  EXPECT_EQ(c.num_layers, demo::kDemoShape.layers);
  EXPECT_TRUE(c.tie_word_embeddings);
  const auto st = model::SafeTensors::open(dir);
  uint64_t params = 0;
  for (const auto& t : st.tensors()) {
    EXPECT_EQ(t.dtype, DType::bf16) << t.name;
    params += t.numel();
  }
  EXPECT_EQ(params, demo::demo_parameter_count());
  EXPECT_EQ(st.find("lm_head.weight"), nullptr) << "tied: no lm_head tensor";

  const auto files = infer::ChatModelFiles::load(dir, c);
  EXPECT_TRUE(files.warnings.empty()) << files.warnings.front();
  EXPECT_EQ(files.chat.name(), "ChatML (Qwen2.5)");
  EXPECT_TRUE(files.chat.known_text());
  EXPECT_EQ(files.eos, (std::vector<int32_t>{151643, 151645}));
  // The real vocabulary: 151,643 BPE tokens, then Qwen2.5's 22 added tokens and not Qwen3's four more.
  const auto ids = files.tokenizer.encode("<|im_start|>user\nHello world<|im_end|><think>", false);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids[0], 151644);
  EXPECT_EQ(ids[1], 872);     // "user"
  EXPECT_EQ(ids[3], 9707);    // "Hello"
  EXPECT_EQ(ids[4], 1879);    // " world"
  EXPECT_EQ(ids[5], 151645);
  EXPECT_GT(ids.size(), 7u) << "<think> is no token of Qwen2.5's";
  const auto j = nlohmann::json::parse(demo::qwen25_tokenizer_json());
  EXPECT_EQ(j["model"]["vocab"].size(), 151643u);
  ASSERT_EQ(j["added_tokens"].size(), 22u);
  EXPECT_EQ(j["added_tokens"].back()["id"], 151664);
}

TEST(DemoData, ParsesWithNoBadLineInTheShapeWithADisjointHeldOutSplit) {
  test::TempDir root;
  const auto data = demo::ensure_demo_data(root.path());
  EXPECT_TRUE(test::read_text(data.train) == demo::demo_train_jsonl());
  EXPECT_TRUE(test::read_text(data.validation) == demo::demo_val_jsonl());

  auto questions = [](const std::string& jsonl, const char* what) {
    std::set<std::string> q;
    std::istringstream in(jsonl);
    size_t n = 0;
    for (std::string line; std::getline(in, line); ++n) {
      const auto j = nlohmann::json::parse(line);
      const auto& m = j.at("messages");
      EXPECT_EQ(m.size(), 2u) << what << ":" << n + 1;
      EXPECT_EQ(m.at(0).at("role"), "user");
      EXPECT_EQ(m.at(1).at("role"), "assistant");
      const auto a = nlohmann::json::parse(m.at(1).at("content").get<std::string>());
      EXPECT_EQ(a.size(), 2u) << what << ":" << n + 1;
      EXPECT_TRUE(a.at("topic").is_string() && !a.at("topic").get<std::string>().empty()) << what << ":" << n + 1;
      const std::string k = a.at("kind");
      EXPECT_TRUE(k == "fact" || k == "estimate" || k == "unknowable") << what << ":" << n + 1;
      EXPECT_TRUE(q.insert(m.at(0).at("content").get<std::string>()).second) << what << ":" << n + 1 << " repeats a question";
    }
    return q;
  };
  const auto train = questions(demo::demo_train_jsonl(), "demo_train.jsonl");
  const auto val = questions(demo::demo_val_jsonl(), "demo_val.jsonl");
  EXPECT_GE(train.size(), 250u);
  EXPECT_GE(val.size(), 25u);
  for (const auto& q : val) EXPECT_EQ(train.count(q), 0u) << "held-out question in the training data: " << q;
  const auto prompts = demo::demo_prompts(3);
  ASSERT_EQ(prompts.size(), 3u);
  for (const auto& p : prompts) EXPECT_EQ(val.count(p.question), 1u) << p.question;

  // The loader reads every line (a bad one would throw) with the demo model's tokenizer and template.
  const auto& dir = shared_model();
  const auto files = infer::ChatModelFiles::load(dir, model::load_config(dir));
  const auto config = demo::demo_train_config(dir, data, demo::kDemoSteps);
  const auto ds = train::load_dataset(data.train, files.tokenizer, files.chat, config.data_options);
  EXPECT_EQ(ds.train_examples, train.size());
  EXPECT_EQ(ds.validation_examples, val.size());
  EXPECT_EQ(ds.skipped_lines, 0u);
  EXPECT_EQ(ds.truncated, 0u) << "every example fits the demo's sequence length";
  EXPECT_TRUE(ds.warnings.empty()) << ds.warnings.front();
  for (const auto* rows : {&ds.train, &ds.validation})
    for (const auto& ex : *rows)
      EXPECT_LE(ex.ids.size(), 64u) << "line " << ex.line << ": the demo's batches are 64 tokens wide (a longer "
                                    << "example doubles the step's cost)";
  std::printf("[ demo ] %zu training and %zu held-out examples, the longest %zu tokens\n", ds.train_examples,
              ds.validation_examples, ds.longest);
}

}  // namespace
}  // namespace ls
