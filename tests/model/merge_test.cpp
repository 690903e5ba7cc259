// merge_adapter on qwen2_tiny and its PEFT adapter (r 4, alpha 8, all seven projections, random A and B):
// - the merged folder run by our generator gives the logits of the base run with the adapter, every
//   position, within 5e-5 relative (test::expect_close; f32 fixture; measured below: on lavapipe within
//   1e-5, on the H100 two of 40,788 logits 2.6x past 1e-5, max abs 1.9e-5 with max |logit| ~7, as the
//   two paths sum in different orders);
// - merged weights equal W + scale·B·A computed here on the CPU, bit for bit, for f32, f16 and bf16 bases
//   (bf16/f16 bases made here by converting the fixture with our writer), rsLoRA's scale included, and
//   hand-picked bf16 cases round to nearest even with NaN and inf kept and overflow going to inf;
// - every other tensor is copied byte for byte, same names, dtypes and order; the side files (config,
//   tokenizer) are copied as they are and nothing else is;
// - a small shard size gives model-0000i-of-0000n files and an index that our reader loads, with the same
//   tensors, and the sharded folder merges again as a base;
// - every malformed input throws ls::Error naming the file and the problem, and leaves no output behind;
//   an existing output folder is refused unless overwrite, and never one holding the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "infer/generator.h"
#include "model/merge.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "support/testing.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::read_text;
using test::TempDir;
using test::throws_error;
using test::write_text;

const fs::path kModel = test::fixtures_dir() / "models/qwen2_tiny";
const fs::path kAdapter = kModel / "adapter";

std::vector<float> floats(const TensorInfo& t) {
  std::vector<float> v(t.numel());
  const auto* p = t.bytes.data();
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    switch (t.dtype) {
      case DType::f32: std::memcpy(&v[i], p + 4 * i, 4); break;
      case DType::f16: std::memcpy(&h, p + 2 * i, 2); v[i] = f16_to_f32(h); break;
      case DType::bf16: std::memcpy(&h, p + 2 * i, 2); v[i] = bf16_to_f32(h); break;
      case DType::i32: ADD_FAILURE() << t.name << " is i32"; break;
    }
  }
  return v;
}

std::vector<std::byte> bytes_in(DType dtype, const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = dtype == DType::f16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
    if (dtype == DType::f32) std::memcpy(out.data() + 4 * i, &v[i], 4);
    else std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<uint8_t> raw(std::span<const std::byte> b) {
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  return {p, p + b.size()};
}

// The tensor names of a (possibly sharded) file set in data order: by file, then offset.
std::vector<std::string> names_in_file_order(const SafeTensors& st) {
  std::vector<const TensorInfo*> order;
  for (const auto& t : st.tensors()) order.push_back(&t);
  std::map<fs::path, size_t> file_index;
  for (const auto& f : st.files()) file_index.emplace(f.path(), file_index.size());
  std::sort(order.begin(), order.end(), [&](auto* a, auto* b) {
    return std::pair(file_index[a->file], a->bytes.data()) < std::pair(file_index[b->file], b->bytes.data());
  });
  std::vector<std::string> names;
  for (auto* t : order) names.push_back(t->name);
  return names;
}

// Every tensor of the adapter folder, named by the base weight it adapts: {A, B}.
struct Pair {
  std::vector<float> a, b;
  uint64_t r = 0;
};
std::map<std::string, Pair> adapter_pairs(const fs::path& adapter_dir) {
  auto st = SafeTensors::open(adapter_dir / "adapter_model.safetensors");
  std::map<std::string, Pair> pairs;
  for (const auto& t : st.tensors()) {
    const bool is_a = t.name.ends_with(".lora_A.weight");
    const std::string module = t.name.substr(17, t.name.size() - 17 - 14);  // minus base_model.model. / .lora_X.weight
    Pair& p = pairs[module + ".weight"];
    (is_a ? p.a : p.b) = floats(t);
    if (is_a) p.r = t.shape[0];
  }
  return pairs;
}

// W + scale·B·A on the CPU, rounded into W's dtype: the merge as merge.h defines it.
std::vector<float> expected_merge(const TensorInfo& w, const Pair& p, double scale) {
  const size_t out = w.shape[0], in = w.shape[1];
  std::vector<float> wv = floats(w), result(wv.size());
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) {
      double s = 0;
      for (size_t k = 0; k < p.r; ++k) s += double(p.b[o * p.r + k]) * double(p.a[k * in + i]);
      result[o * in + i] = round_to(w.dtype, wv[o * in + i] + float(scale * s));
    }
  return result;
}

// A copy of the fixture model folder whose weights are converted to `dtype` with our writer (after `edit`).
void make_base(const fs::path& dir, DType dtype,
               const std::function<void(const std::string&, std::vector<float>&)>& edit = {}) {
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(kModel / f, dir / f);
  auto st = SafeTensors::open(kModel / "model.safetensors");
  std::vector<std::vector<std::byte>> bytes;
  for (const auto& t : st.tensors()) {
    std::vector<float> v = floats(t);
    if (edit) edit(t.name, v);
    bytes.push_back(bytes_in(dtype, v));
  }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < st.tensors().size(); ++i)
    tensors.push_back({st.tensors()[i].name, dtype, st.tensors()[i].shape, bytes[i]});
  write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
}

// The merged weights of `out` against expected_merge of the base and adapter, bit for bit; the rest
// byte for byte.
void expect_merged_exactly(const fs::path& base_dir, const fs::path& adapter_dir, const fs::path& out, double scale) {
  auto base = SafeTensors::open(base_dir);
  auto merged = SafeTensors::open(out);
  const auto pairs = adapter_pairs(adapter_dir);
  ASSERT_EQ(merged.tensors().size(), base.tensors().size());
  EXPECT_EQ(names_in_file_order(merged), names_in_file_order(base));
  size_t merged_count = 0;
  for (const auto& t : base.tensors()) {
    const TensorInfo& m = merged.at(t.name);
    EXPECT_EQ(m.dtype, t.dtype) << t.name;
    EXPECT_EQ(m.shape, t.shape) << t.name;
    auto it = pairs.find(t.name);
    if (it == pairs.end()) {
      EXPECT_EQ(raw(m.bytes), raw(t.bytes)) << t.name << " is not byte-identical to the base's";
      continue;
    }
    ++merged_count;
    const std::vector<float> want = expected_merge(t, it->second, scale);
    std::vector<uint8_t> want_bytes = raw(bytes_in(t.dtype, want));
    EXPECT_EQ(raw(m.bytes), want_bytes) << t.name << " differs from W + scale·B·A";
    EXPECT_NE(raw(m.bytes), raw(t.bytes)) << t.name << " was not changed";
  }
  EXPECT_EQ(merged_count, 14u);  // 2 layers × 7 projections
}

class Merge : public test::GpuTest {};

TEST_F(Merge, MergedModelGivesTheAdaptedLogits) {
  TempDir tmp;
  const fs::path out = tmp / "merged";
  const MergeReport r = merge_adapter(kModel, kAdapter, out);
  EXPECT_EQ(r.merged, 14u);
  EXPECT_EQ(r.copied, 12u);
  EXPECT_EQ(r.shards, 1u);
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_FALSE(fs::exists(out / "model.safetensors.index.json"));

  auto expected_st = SafeTensors::open(kModel / "expected.safetensors");
  const auto& ids_info = expected_st.at("ids");
  std::vector<int32_t> ids(ids_info.numel());
  std::memcpy(ids.data(), ids_info.bytes.data(), ids_info.bytes.size());

  const auto base = Model::load(dev(), kModel);
  const auto adapter = load_peft_adapter(dev(), base.config, kAdapter);
  infer::Generator with_adapter(dev(), base, &adapter, {.context = 128});
  const auto want = with_adapter.logits_of_every_position(ids);

  const auto merged = Model::load(dev(), out);
  infer::Generator plain(dev(), merged, nullptr, {.context = 128});
  const auto got = plain.logits_of_every_position(ids);
  const uint32_t V = base.config.vocab_size;
  test::expect_close(got, want, 5e-5, "merged vs base + adapter logits", {uint32_t(ids.size()), V});
  const auto s = test::compare(got, want);
  std::printf("  [measured] merged vs adapter logits: max abs %.2e, max rel (by max |e|) %.2e\n", s.max_abs, s.max_rel);

  infer::Generator base_only(dev(), base, nullptr, {.context = 128});
  EXPECT_GT(test::compare(base_only.logits_of_every_position(ids), want).max_abs, 1e-2) << "the adapter does nothing?";
}

TEST(MergeCpu, WeightsAreWPlusScaledBATheRestIsCopied) {
  TempDir tmp;
  merge_adapter(kModel, kAdapter, tmp / "merged");
  expect_merged_exactly(kModel, kAdapter, tmp / "merged", 8.0 / 4.0);
  // Side files as they are; nothing else of the model folder (expected*.safetensors, adapter/).
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp / "merged")) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                                          "tokenizer_config.json"}));
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_EQ(read_text(tmp / "merged" / f), read_text(kModel / f)) << f;
  EXPECT_EQ(SafeTensors::open(tmp / "merged").metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST(MergeCpu, HalfPrecisionBasesRoundToNearestEven) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dtype));
    TempDir tmp;
    make_base(tmp / "base", dtype);
    merge_adapter(tmp / "base", kAdapter, tmp / "merged");
    expect_merged_exactly(tmp / "base", kAdapter, tmp / "merged", 2.0);
  }
}

TEST(MergeCpu, RsLoraScalesByAlphaOverSqrtR) {
  TempDir tmp;
  fs::copy(kAdapter, tmp / "adapter");
  auto j = nlohmann::json::parse(read_text(kAdapter / "adapter_config.json"));
  j["use_rslora"] = true;
  write_text(tmp / "adapter/adapter_config.json", j.dump());
  merge_adapter(kModel, tmp / "adapter", tmp / "merged");
  expect_merged_exactly(kModel, tmp / "adapter", tmp / "merged", 8.0 / std::sqrt(4.0));
}

// Hand-picked bf16 sums: W + B·A with rank 1 and scale 1 (alpha = r = 1) on layer 0's q_proj, where B is 1
// on row 0 and 0 elsewhere, so row 0 gets A's values as deltas and the other rows stay as they are.
TEST(MergeCpu, Bf16RoundingCases) {
  struct Case {
    float w, delta;
    uint16_t want;
    const char* what;
  };
  const float inf = INFINITY, bf16_max = bf16_to_f32(0x7f7f);
  const std::vector<Case> cases = {
      {1.0f, 0x1p-8f, 0x3f80, "1 + half an ulp: a tie, to the even 1"},
      {1.0f + 0x1p-7f, 0x1p-8f, 0x3f82, "odd mantissa + half an ulp: a tie, up to the even"},
      {1.0f, 0x1p-8f + 0x1p-20f, 0x3f81, "just over half an ulp: up"},
      {1.0f, 0x1p-8f - 0x1p-20f, 0x3f80, "just under half an ulp: down"},
      {-1.0f, -0x1p-8f, 0xbf80, "a negative tie, to the even -1"},
      {NAN, 1.0f, 0x7fc0, "NaN stays NaN"},
      {inf, -1.0f, 0x7f80, "inf stays inf"},
      {-inf, 1.0f, 0xff80, "-inf stays -inf"},
      {bf16_max, 0x1p120f, 0x7f80, "past the largest bf16: inf"},
      {bf16_max, 0x1p118f, 0x7f7f, "a quarter ulp over the largest: stays"},
  };
  const std::string q = "model.layers.0.self_attn.q_proj.weight";
  const size_t C = 64;  // q_proj is [64, 64]
  TempDir tmp;
  make_base(tmp / "base", DType::bf16, [&](const std::string& name, std::vector<float>& v) {
    if (name == q)
      for (size_t c = 0; c < cases.size(); ++c) v[c] = cases[c].w;
  });
  fs::create_directories(tmp / "adapter");
  write_text(tmp / "adapter/adapter_config.json",
             R"({"peft_type": "LORA", "r": 1, "lora_alpha": 1, "target_modules": ["q_proj"], "bias": "none"})");
  std::vector<float> a(C, 0.0f), b(C, 0.0f);
  for (size_t c = 0; c < cases.size(); ++c) a[c] = cases[c].delta;
  b[0] = 1.0f;
  const std::vector<TensorToWrite> lora = {
      {"base_model.model." + q.substr(0, q.size() - 7) + ".lora_A.weight", DType::f32, {1, C}, test::bytes_of(a)},
      {"base_model.model." + q.substr(0, q.size() - 7) + ".lora_B.weight", DType::f32, {C, 1}, test::bytes_of(b)}};
  write_safetensors(tmp / "adapter/adapter_model.safetensors", lora);

  const MergeReport r = merge_adapter(tmp / "base", tmp / "adapter", tmp / "merged");
  EXPECT_EQ(r.merged, 1u);
  auto base = SafeTensors::open(tmp / "base");
  auto merged = SafeTensors::open(tmp / "merged");
  const auto& m = merged.at(q);
  for (size_t c = 0; c < cases.size(); ++c) {
    uint16_t got;
    std::memcpy(&got, m.bytes.data() + 2 * c, 2);
    EXPECT_EQ(got, cases[c].want) << cases[c].what << std::hex << ": got 0x" << got << ", want 0x" << cases[c].want;
  }
  // Row 0 past the cases and every other row: W + 0.
  EXPECT_EQ(raw(m.bytes.subspan(2 * cases.size())), raw(base.at(q).bytes.subspan(2 * cases.size())));
}

// Each bad input: ls::Error naming the file and the problem, and nothing left in the output's folder.
class MergeErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(kModel, tmp_ / "model", fs::copy_options::recursive);
    fs::remove_all(tmp_ / "model/adapter");
    fs::remove_all(tmp_ / "model/train_adapter");
    fs::copy(kAdapter, tmp_ / "adapter");
  }
  fs::path model() const { return tmp_ / "model"; }
  fs::path adapter() const { return tmp_ / "adapter"; }
  fs::path adapter_file() const { return tmp_ / "adapter/adapter_model.safetensors"; }

  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(read_text(adapter() / "adapter_config.json"));
    edit(j);
    write_text(adapter() / "adapter_config.json", j.dump());
  }
  // Rewrites adapter_model.safetensors after `edit` changes its tensor list.
  void edit_adapter(const std::function<void(std::vector<TensorToWrite>&)>& edit) {
    std::string bytes;
    {
      auto st = SafeTensors::open(adapter_file());
      std::vector<TensorToWrite> tensors;
      for (const auto& t : st.tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.bytes});
      edit(tensors);
      bytes = serialize_safetensors(tensors, {}, adapter_file());
    }
    write_text(adapter_file(), bytes);
  }
  TensorToWrite* find(std::vector<TensorToWrite>& tensors, std::string_view name) {
    for (auto& t : tensors)
      if (t.name == name) return &t;
    ADD_FAILURE() << "no " << name;
    return &tensors[0];
  }

  ::testing::AssertionResult fails(std::initializer_list<std::string_view> parts, const MergeOptions& options = {}) {
    auto r = throws_error([&] { merge_adapter(model(), adapter(), out(), options); }, parts);
    std::set<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp_.path())) left.insert(e.path().filename().string());
    left.erase("model");
    left.erase("adapter");
    left.erase("out");    // a test may have made it on purpose
    left.erase("aside");  // a file a test moved out of the way
    if (!left.empty()) return ::testing::AssertionFailure() << "left behind: " << *left.begin();
    return r;
  }
  fs::path out() const { return tmp_ / "out"; }

  TempDir tmp_;
  const std::string q0 = "base_model.model.model.layers.0.self_attn.q_proj";
};

TEST_F(MergeErrors, MissingFiles) {
  EXPECT_TRUE(throws_error([&] { merge_adapter(tmp_ / "nope", adapter(), out()); }, {"nope", "does not exist"}));
  fs::rename(adapter_file(), tmp_ / "aside");
  EXPECT_TRUE(fails({"adapter_model.safetensors", "missing"}));
  fs::rename(tmp_ / "aside", adapter_file());
  fs::rename(adapter() / "adapter_config.json", tmp_ / "aside");
  EXPECT_TRUE(fails({"adapter_config.json", "cannot open"}));
  fs::rename(tmp_ / "aside", adapter() / "adapter_config.json");
  fs::rename(model() / "config.json", tmp_ / "aside");
  EXPECT_TRUE(fails({"config.json", "missing"}));
  fs::rename(tmp_ / "aside", model() / "config.json");
  fs::rename(model() / "model.safetensors", tmp_ / "aside");
  EXPECT_TRUE(fails({model().string(), "model.safetensors"}));
  fs::rename(tmp_ / "aside", model() / "model.safetensors");
  EXPECT_NO_THROW(merge_adapter(model(), adapter(), out()));
}

TEST_F(MergeErrors, UnsupportedAdapterOptions) {
  const auto original = read_text(adapter() / "adapter_config.json");
  auto expect_refused = [&](const char* key, nlohmann::json value, const char* word) {
    write_text(adapter() / "adapter_config.json", original);
    edit_config([&](auto& j) { j[key] = value; });
    EXPECT_TRUE(fails({"adapter_config.json", word})) << key;
  };
  expect_refused("use_dora", true, "use_dora");
  expect_refused("fan_in_fan_out", true, "fan_in_fan_out");
  expect_refused("bias", "all", "bias");
  expect_refused("lora_bias", true, "lora_bias");
  expect_refused("rank_pattern", {{"q_proj", 8}}, "rank_pattern");
  expect_refused("target_modules", ".*proj", "regex");
  // Values of the wrong JSON type are refused naming the file, not a crash (the fuzzer's find: peft_type true).
  expect_refused("peft_type", true, "bad value");
  expect_refused("r", "eight", "\"r\" must be a whole number");
  expect_refused("lora_alpha", nlohmann::json::array(), "\"lora_alpha\" must be a finite number");
  // Numbers out of range or of the wrong kind, checked before any conversion (adapter_config_fuzz's find, session
  // 26: "r": 1e48 reached nlohmann's unchecked float-to-unsigned conversion, undefined behaviour under UBSan).
  expect_refused("r", 1e48, "\"r\" must be a whole number from 1 to 65536");
  expect_refused("r", -3, "\"r\" must be a whole number");
  expect_refused("r", 8.5, "\"r\" must be a whole number");
  expect_refused("r", 0, "\"r\" must be a whole number");
  expect_refused("r", 4294967297u, "\"r\" must be a whole number");
  expect_refused("lora_alpha", 1e300, "\"lora_alpha\" must be a finite number");
  expect_refused("lora_dropout", 1.5, "\"lora_dropout\" must be at least 0 and below 1");
  expect_refused("lora_dropout", "0.1", "\"lora_dropout\" must be a finite number");
  expect_refused("bias", false, "bad value");
  expect_refused("target_modules", {1, 2}, "bad value");
}

TEST_F(MergeErrors, AdapterForAnotherModel) {
  // A layer the model does not have.
  edit_adapter([&](auto& t) {
    for (auto& x : t)
      if (x.name.starts_with("base_model.model.model.layers.1.")) x.name.replace(30, 1, "5");
  });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "model.layers.5.", "does not have"}));
}

TEST_F(MergeErrors, AShapeDiffersFromTheWeight) {
  // q_proj's A taken from down_proj: [4, 160] where q_proj's in is 64.
  edit_adapter([&](auto& t) {
    const auto* down = find(t, "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight");
    auto* a = find(t, q0 + ".lora_A.weight");
    a->shape = down->shape;
    a->bytes = down->bytes;
  });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "q_proj", "[4, 160]", "do not fit", "[64, 64]", "A's in must be 64"}));
}

TEST_F(MergeErrors, BShapeDiffersFromTheWeight) {
  // k_proj's B taken from q_proj: [64, 4] where k_proj's out is 32.
  edit_adapter([&](auto& t) {
    const auto* q = find(t, q0 + ".lora_B.weight");
    auto* b = find(t, "base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight");
    b->shape = q->shape;
    b->bytes = q->bytes;
  });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "k_proj", "do not fit", "[32, 64]", "B's out 32"}));
}

TEST_F(MergeErrors, RankMismatch) {
  edit_adapter([&](auto& t) {
    auto* a = find(t, q0 + ".lora_A.weight");
    a->shape = {3, 64};
    a->bytes = a->bytes.first(3 * 64 * 4);
  });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "q_proj", "rank mismatch", "[3, 64]", "[64, 4]"}));
  fs::copy(kAdapter / "adapter_model.safetensors", adapter_file(), fs::copy_options::overwrite_existing);
  edit_config([](auto& j) { j["r"] = 8; });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "rank mismatch", "r = 8"}));
}

TEST_F(MergeErrors, UnpairedOrForeignTensors) {
  edit_adapter([&](auto& t) { std::erase_if(t, [&](auto& x) { return x.name == q0 + ".lora_B.weight"; }); });
  EXPECT_TRUE(fails({"adapter_model.safetensors", q0 + ".lora_B.weight", "missing"}));
  fs::copy(kAdapter / "adapter_model.safetensors", adapter_file(), fs::copy_options::overwrite_existing);
  edit_config([](auto& j) { j["target_modules"] = {"q_proj", "v_proj"}; });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "down_proj", "target_modules"}));
  fs::copy(kAdapter / "adapter_config.json", adapter() / "adapter_config.json", fs::copy_options::overwrite_existing);
  const std::vector<float> extra(4, 1.0f);
  edit_adapter([&](auto& t) { t.push_back({"base_model.model.lm_head.weight", DType::f32, {4}, test::bytes_of(extra)}); });
  EXPECT_TRUE(fails({"adapter_model.safetensors", "lm_head.weight", "not a LoRA matrix"}));
}

TEST_F(MergeErrors, OutputFolderRules) {
  fs::create_directories(out());
  write_text(out() / "keep.txt", "mine");
  EXPECT_TRUE(fails({out().string(), "not empty"}));
  EXPECT_EQ(read_text(out() / "keep.txt"), "mine");
  merge_adapter(model(), adapter(), out(), {.overwrite = true});
  EXPECT_FALSE(fs::exists(out() / "keep.txt"));
  EXPECT_TRUE(fs::exists(out() / "model.safetensors"));
  // An empty folder is fine without overwrite; a trailing slash names the same folder.
  fs::remove_all(out());
  fs::create_directories(out());
  merge_adapter(model(), adapter(), out().string() + "/");
  EXPECT_TRUE(fs::exists(out() / "model.safetensors"));
  // Never into an input folder, not even with overwrite.
  EXPECT_TRUE(throws_error([&] { merge_adapter(model(), adapter(), model(), {.overwrite = true}); }, {"holds the model"}));
  EXPECT_TRUE(throws_error([&] { merge_adapter(model(), adapter(), tmp_.path(), {.overwrite = true}); }, {"holds the model"}));
  EXPECT_TRUE(fs::exists(model() / "model.safetensors"));
  fs::remove_all(out());
  write_text(out(), "a file");
  EXPECT_TRUE(fails({out().string(), "not a folder"}));
}

TEST(MergeCpu, ShardsLikeTransformersAndReadsShardsBack) {
  TempDir tmp;
  merge_adapter(kModel, kAdapter, tmp / "one");
  const uint64_t max = 100'000;  // the fixture's tensors: 158 KB embedding, then layers of ~70 KB
  const MergeReport r = merge_adapter(kModel, kAdapter, tmp / "sharded", {.max_shard_bytes = max});
  ASSERT_GT(r.shards, 2u);
  auto index = nlohmann::json::parse(read_text(tmp / "sharded/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), r.bytes);
  std::set<std::string> files;
  for (const auto& [name, file] : index["weight_map"].items()) files.insert(file.get<std::string>());
  std::set<std::string> want;
  char name[64];
  for (size_t i = 1; i <= r.shards; ++i) {
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i, r.shards);
    want.insert(name);
    auto shard = SafeTensors::open(tmp / "sharded" / name);
    uint64_t bytes = 0;
    for (const auto& t : shard.tensors()) bytes += t.bytes.size();
    EXPECT_TRUE(bytes <= max || shard.tensors().size() == 1) << name << " holds " << bytes << " bytes";
    EXPECT_EQ(shard.metadata().at("format"), "pt");
  }
  EXPECT_EQ(files, want);
  EXPECT_FALSE(fs::exists(tmp / "sharded/model.safetensors"));

  auto one = SafeTensors::open(tmp / "one"), sharded = SafeTensors::open(tmp / "sharded");
  ASSERT_EQ(sharded.tensors().size(), one.tensors().size());
  EXPECT_EQ(names_in_file_order(sharded), names_in_file_order(one));
  for (const auto& t : one.tensors()) EXPECT_EQ(raw(sharded.at(t.name).bytes), raw(t.bytes)) << t.name;

  // The sharded folder as a base: read through its index, written back as one file in the same order.
  fs::create_directories(tmp / "adapter0");
  write_text(tmp / "adapter0/adapter_config.json",
             R"({"peft_type": "LORA", "r": 1, "lora_alpha": 1, "target_modules": ["o_proj"]})");
  const std::vector<float> zeros(64, 0.0f);
  const std::vector<TensorToWrite> lora = {
      {"base_model.model.model.layers.1.self_attn.o_proj.lora_A.weight", DType::f32, {1, 64}, test::bytes_of(zeros)},
      {"base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight", DType::f32, {64, 1}, test::bytes_of(zeros)}};
  write_safetensors(tmp / "adapter0/adapter_model.safetensors", lora);
  merge_adapter(tmp / "sharded", tmp / "adapter0", tmp / "again");
  auto again = SafeTensors::open(tmp / "again");
  EXPECT_EQ(names_in_file_order(again), names_in_file_order(one));
  for (const auto& t : one.tensors()) EXPECT_EQ(raw(again.at(t.name).bytes), raw(t.bytes)) << t.name;
  EXPECT_FALSE(fs::exists(tmp / "again/model.safetensors.index.json"));
}

}  // namespace
}  // namespace ls::model
