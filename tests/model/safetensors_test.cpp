// safetensors: the writer's exact bytes (hand-computed goldens, the reference library's own test vectors, and,
// when tests/fixtures/model_io_reference.json exists, the bytes the Python library wrote), round trips,
// sharded models, and every malformed-header error naming the file, the tensor and the problem.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <bit>
#include <nlohmann/json.hpp>
#include <optional>

#include "model/model_files.h"
#include "tensor/dtype.h"

namespace ls::model {
namespace {

using test::bytes_of;
using test::TempDir;
using test::throws_error;
using test::write_text;

// 8-byte little-endian length (the header's own unless `declared`), header, data.
std::string raw_file(std::string_view header, std::string_view data = {}, std::optional<uint64_t> declared = {}) {
  const uint64_t n = declared.value_or(header.size());
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xff));
  out += header;
  out += data;
  return out;
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) {
    uint32_t u = std::bit_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) out.push_back(char((u >> (8 * i)) & 0xff));
  }
  return out;
}

std::string as_string(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// ---------------------------------------------------------------------------------------------------------
// Writer: exact bytes

TEST(SafetensorsWrite, TwoTensorGoldenBytes) {
  const std::vector<float> a = {1.0f, -2.0f}, b = {0.5f, 3.0f};
  // Given out of order: the writer sorts by name (same dtype).
  const TensorToWrite tensors[] = {{"b", DType::f32, {1, 2}, bytes_of(b)}, {"a", DType::f32, {2}, bytes_of(a)}};
  // 110 header characters + 2 spaces = 112 = 0x70.
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]}})"
      "  ";
  ASSERT_EQ(header.size(), 112u);
  const std::string expected = std::string("\x70\0\0\0\0\0\0\0", 8) + header +
                               std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x3f\x00\x00\x40\x40", 16);
  EXPECT_EQ(serialize_safetensors(tensors, {}, "x.safetensors"), expected);

  // With metadata: "__metadata__" first. 141 characters + 3 spaces = 144 = 0x90.
  const std::string header_md =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]}})"
      "   ";
  ASSERT_EQ(header_md.size(), 144u);
  EXPECT_EQ(serialize_safetensors(tensors, {{"format", "pt"}}, "x.safetensors"),
            std::string("\x90\0\0\0\0\0\0\0", 8) + header_md + expected.substr(8 + 112));

  TempDir dir;
  write_safetensors(dir / "two.safetensors", tensors, {{"format", "pt"}});
  EXPECT_EQ(test::read_text(dir / "two.safetensors"), serialize_safetensors(tensors, {{"format", "pt"}}, "x"));
}

// The byte vectors asserted by the reference library's own tests (safetensors/src/tensor.rs).
TEST(SafetensorsWrite, ReferenceLibraryTestVectors) {
  const std::vector<float> data = {0, 1, 2, 3, 4, 5};
  const std::string values = f32_bytes({0, 1, 2, 3, 4, 5});
  {
    const TensorToWrite t[] = {{"attn.0", DType::f32, {1, 2, 3}, bytes_of(data)}};
    EXPECT_EQ(serialize_safetensors(t, {}, "x"),
              raw_file(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", values));
    EXPECT_EQ(serialize_safetensors(t, {}, "x")[0], char(64));
  }
  {  // "forced alignment": 65 characters padded with 7 spaces to 72
    const TensorToWrite t[] = {{"attn0", DType::f32, {1, 1, 2, 3}, bytes_of(data)}};
    EXPECT_EQ(serialize_safetensors(t, {}, "x"),
              raw_file(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})"
                       "       ",
                       values));
    EXPECT_EQ(serialize_safetensors(t, {}, "x")[0], char(72));
  }
  EXPECT_EQ(serialize_safetensors({}, {}, "x"), raw_file("{}      "));
  EXPECT_EQ(serialize_safetensors({}, {{"framework", "pt"}}, "x"), raw_file(R"({"__metadata__":{"framework":"pt"}})"
                                                                            "     "));
}

TEST(SafetensorsWrite, OrdersByDtypeAlignmentThenName) {
  const std::vector<uint16_t> a = {f32_to_f16(1.0f), f32_to_f16(2.5f), f32_to_f16(-3.0f)};
  const std::vector<uint16_t> b = {f32_to_bf16(0.1f), f32_to_bf16(0.2f), f32_to_bf16(0.3f), f32_to_bf16(0.4f)};
  const std::vector<float> c = {7.0f};
  const std::vector<int32_t> d = {5, -6};
  const TensorToWrite t[] = {{"a", DType::f16, {3}, bytes_of(a)},
                             {"b", DType::bf16, {2, 2}, bytes_of(b)},
                             {"c", DType::f32, {1}, bytes_of(c)},
                             {"d", DType::i32, {2}, bytes_of(d)}};
  const std::string out = serialize_safetensors(t, {{"format", "pt"}}, "x");
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("d":{"dtype":"I32","shape":[2],"data_offsets":[4,12]},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[12,20]},)"
      R"("a":{"dtype":"F16","shape":[3],"data_offsets":[20,26]}})";
  const size_t padded = (header.size() + 7) / 8 * 8;
  EXPECT_EQ(
      out, raw_file(header + std::string(padded - header.size(), ' '),
                    as_string(bytes_of(c)) + as_string(bytes_of(d)) + as_string(bytes_of(b)) + as_string(bytes_of(a))));
}

TEST(SafetensorsWrite, EscapesNamesAsSerdeJson) {
  const std::vector<float> v = {1.0f};
  const TensorToWrite t[] = {{"\xc3\xa9/\"q\"\n\\x\x01", DType::f32, {1}, bytes_of(v)}};
  const std::string header =
      "{\"\xc3\xa9/\\\"q\\\"\\n\\\\x\\u0001\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  const size_t padded = (header.size() + 7) / 8 * 8;
  EXPECT_EQ(serialize_safetensors(t, {}, "x"),
            raw_file(header + std::string(padded - header.size(), ' '), f32_bytes({1})));
}

TEST(SafetensorsWrite, RefusesInconsistentInput) {
  TempDir dir;
  const std::vector<float> v = {1, 2, 3};
  const auto path = dir / "w.safetensors";
  const TensorToWrite wrong_size[] = {{"w", DType::f32, {2, 2}, bytes_of(v)}};
  EXPECT_TRUE(throws_error([&] { write_safetensors(path, wrong_size); },
                           {"w.safetensors", "tensor \"w\"", "[2, 2]", "needs 16 bytes, given 12"}));
  const TensorToWrite twice[] = {{"w", DType::f32, {3}, bytes_of(v)}, {"w", DType::f32, {3}, bytes_of(v)}};
  EXPECT_TRUE(throws_error([&] { write_safetensors(path, twice); }, {"w.safetensors", "tensor \"w\"", "given twice"}));
  const TensorToWrite reserved[] = {{"__metadata__", DType::f32, {3}, bytes_of(v)}};
  EXPECT_TRUE(throws_error([&] { write_safetensors(path, reserved); }, {"w.safetensors", "reserved"}));
  const TensorToWrite bad_utf8[] = {{"\xff", DType::f32, {3}, bytes_of(v)}};
  EXPECT_TRUE(throws_error([&] { write_safetensors(path, bad_utf8); }, {"w.safetensors", "not valid UTF-8"}));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// The streamed writer writes what serialize_safetensors makes, whatever the pieces; a tensor handing over the
// wrong byte count is an error naming it, and the file is not left behind.
TEST(SafetensorsWrite, StreamedWriterWritesTheSameBytes) {
  TempDir dir;
  const std::vector<uint16_t> a = {f32_to_f16(1.0f), f32_to_f16(2.5f), f32_to_f16(-3.0f)};
  const std::vector<float> c = {7.0f, 8.0f, 9.0f, 10.0f};
  const TensorToWrite whole[] = {{"a", DType::f16, {3}, bytes_of(a)}, {"c", DType::f32, {2, 2}, bytes_of(c)}};
  std::vector<TensorToStream> streamed;
  for (const auto& t : whole)
    streamed.push_back({t.name, t.dtype, t.shape, [bytes = t.bytes](const ByteSink& sink) {
                          for (size_t i = 0; i < bytes.size(); i += 3)
                            sink(bytes.subspan(i, std::min<size_t>(3, bytes.size() - i)));
                        }});
  write_safetensors_streamed(dir / "s.safetensors", streamed, {{"format", "pt"}});
  EXPECT_EQ(test::read_text(dir / "s.safetensors"), serialize_safetensors(whole, {{"format", "pt"}}, "x"));

  for (size_t given : {8ul, 20ul}) {
    const std::vector<std::byte> bytes(given);
    const TensorToStream wrong[] = {{"w", DType::f32, {4}, [&](const ByteSink& sink) { sink(bytes); }}};
    EXPECT_TRUE(throws_error([&] { write_safetensors_streamed(dir / "w.safetensors", wrong); },
                             {"w.safetensors", "tensor \"w\"", "needs 16 bytes, given " + std::to_string(given)}));
  }
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "s.safetensors") << "left behind";
}

// ---------------------------------------------------------------------------------------------------------
// Reader

TEST(SafetensorsRead, RoundTrip) {
  TempDir dir;
  const std::vector<float> w = {1.5f, -2.25f, 3.0f, 4.0f, 5.0f, -6.0f};
  const std::vector<uint16_t> h = {f32_to_f16(0.5f), f32_to_f16(-1.0f), f32_to_f16(2.0f)};
  const std::vector<uint16_t> b = {f32_to_bf16(3.0f), f32_to_bf16(-0.75f)};
  const std::vector<float> scalar = {42.0f}, empty;
  const TensorToWrite t[] = {{"model.w", DType::f32, {2, 3}, bytes_of(w)},
                             {"h", DType::f16, {3}, bytes_of(h)},
                             {"b", DType::bf16, {1, 2}, bytes_of(b)},
                             {"s", DType::f32, {}, bytes_of(scalar)},
                             {"e", DType::f32, {0, 7}, bytes_of(empty)}};
  write_safetensors(dir / "m.safetensors", t, {{"format", "pt"}, {"note", "é"}});
  SafeTensors st = SafeTensors::open(dir / "m.safetensors");
  ASSERT_EQ(st.tensors().size(), 5u);
  std::vector<std::string> names;
  for (const TensorInfo& i : st.tensors()) names.push_back(i.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "e", "h", "model.w", "s"}));  // sorted by name
  for (const TensorToWrite& want : t) {
    const TensorInfo& got = st.at(want.name);
    EXPECT_EQ(got.dtype, want.dtype) << want.name;
    EXPECT_EQ(got.shape, want.shape) << want.name;
    EXPECT_EQ(as_string(got.bytes), as_string(want.bytes)) << want.name;
    EXPECT_EQ(got.file, dir / "m.safetensors");
  }
  EXPECT_EQ(st.at("model.w").numel(), 6u);
  EXPECT_EQ(st.at("s").numel(), 1u);
  EXPECT_EQ(st.at("e").numel(), 0u);
  EXPECT_EQ(st.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "é"}}));
  EXPECT_EQ(st.find("nope"), nullptr);
  EXPECT_TRUE(throws_error([&] { (void)st.at("nope"); }, {"m.safetensors", "no tensor \"nope\""}));

  SafeTensors moved = std::move(st);  // spans stay valid: the maps move, the memory does not
  EXPECT_EQ(as_string(moved.at("h").bytes), as_string(bytes_of(h)));
}

TEST(SafetensorsRead, AcceptsGapsZeroSizeTensorsUnknownKeysAndAnyOrder) {
  TempDir dir;
  const std::string header =
      R"({"y":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1},)"
      R"("z":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]},"__metadata__":{"k":"v"}}   )";
  write_text(dir / "g.safetensors", raw_file(header, f32_bytes({1, 2, 9, 9, 3, 4})));
  SafeTensors st = SafeTensors::open(dir / "g.safetensors");
  EXPECT_EQ(as_string(st.at("x").bytes), f32_bytes({1, 2}));
  EXPECT_EQ(as_string(st.at("y").bytes), f32_bytes({3, 4}));
  EXPECT_EQ(st.at("z").bytes.size(), 0u);
  EXPECT_EQ(st.at("z").dtype, DType::bf16);
  EXPECT_EQ(st.metadata().at("k"), "v");
}

TEST(SafetensorsRead, FileTooShortOrHeaderLengthWrong) {
  TempDir dir;
  const auto p = dir / "bad.safetensors";
  write_text(p, "");
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); }, {"bad.safetensors", "0 bytes", "shorter than the 8-byte"}));
  write_text(p, std::string("\x05\0\0\0\0", 5));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); }, {"bad.safetensors", "5 bytes", "shorter than the 8-byte"}));
  write_text(p, raw_file("{}", "", 1000));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); },
                           {"bad.safetensors", "header length 1000 runs past the end of the file (10 bytes)"}));
  write_text(p, raw_file("{}", "", 100'000'001));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); }, {"bad.safetensors", "100000001", "above the 100 MB limit"}));
  write_text(p, raw_file("{}", "", UINT64_MAX));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); }, {"bad.safetensors", "above the 100 MB limit"}));
  // A header cut short by truncation: the length is right but the JSON ends early.
  const std::string full = raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2}));
  write_text(p, full.substr(0, 30));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); }, {"bad.safetensors", "runs past the end of the file"}));
  write_text(p, full.substr(0, full.size() - 3));  // data section cut
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(p); },
                           {"bad.safetensors", "tensor \"x\"", "[0, 8) run past the data section (5 bytes)"}));
}

struct BadHeader {
  const char* label;
  std::string header;
  std::string data;
  std::vector<std::string> parts;  // beyond the file name
};

TEST(SafetensorsRead, MalformedHeaders) {
  const std::string eight = f32_bytes({1, 2}), twelve = f32_bytes({1, 2, 3});
  const std::vector<BadHeader> cases = {
      {"bad JSON", R"({"x":{"dtype":"F32",)", eight, {"header is not valid JSON"}},
      {"not UTF-8", "{\"x\xff\":1}", eight, {"header is not valid JSON"}},
      {"not an object", "[1, 2]", eight, {"header is not a JSON object"}},
      {"entry not an object", R"({"x":3})", eight, {"tensor \"x\"", "header entry is not an object"}},
      {"no dtype", R"({"x":{"shape":[2],"data_offsets":[0,8]}})", eight, {"tensor \"x\"", "no \"dtype\""}},
      {"no shape", R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", eight, {"tensor \"x\"", "no \"shape\""}},
      {"no offsets", R"({"x":{"dtype":"F32","shape":[2]}})", eight, {"tensor \"x\"", "no \"data_offsets\""}},
      {"dtype not a string",
       R"({"x":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "dtype is not a string"}},
      {"unknown dtype",
       R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "unknown dtype \"F33\""}},
      {"unsupported dtype",
       R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "dtype I64 is not supported"}},
      {"shape not an array",
       R"({"x":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "shape is not an array"}},
      {"negative shape",
       R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "[-2]", "not a non-negative integer"}},
      {"fractional shape",
       R"({"x":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "not a non-negative integer"}},
      {"one offset",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})",
       eight,
       {"tensor \"x\"", "not two non-negative integers"}},
      {"string offset",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,"8"]}})",
       eight,
       {"tensor \"x\"", "not two non-negative integers"}},
      {"negative offset",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[-1,8]}})",
       eight,
       {"tensor \"x\"", "not two non-negative integers"}},
      {"begin after end",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
       eight,
       {"tensor \"x\"", "[8, 0) begin after they end"}},
      {"end past data",
       R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
       eight,
       {"tensor \"x\"", "[0, 16) run past the data section (8 bytes)"}},
      {"shape vs bytes",
       R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "shape [3] of F32 needs 12 bytes", "[0, 8) hold 8"}},
      {"shape overflows",
       R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\"", "overflows"}},
      {"overlap",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       twelve,
       {"tensor \"y\" [4, 12) overlaps tensor \"x\" [0, 8)"}},
      {"overlap inside",
       R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       twelve,
       {"tensor \"y\" [4, 8) overlaps tensor \"x\" [0, 12)"}},
      {"overlap past an empty tensor",
       R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
       R"("y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       twelve,
       {"tensor \"y\" [8, 12) overlaps tensor \"x\" [0, 12)"}},
      {"same tensor twice",
       R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
       eight,
       {"tensor \"x\" appears twice"}},
      {"metadata not an object", R"({"__metadata__":[1]})", "", {"\"__metadata__\" is not an object"}},
      {"metadata value not a string",
       R"({"__metadata__":{"n":1}})",
       "",
       {"\"__metadata__\" value of \"n\" is not a string"}},
  };
  TempDir dir;
  const auto p = dir / "bad.safetensors";
  for (const BadHeader& c : cases) {
    write_text(p, raw_file(c.header, c.data));
    try {
      SafeTensors::open(p);
      ADD_FAILURE() << c.label << ": no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p.string()), std::string::npos) << c.label << ": " << msg;
      for (const std::string& part : c.parts) EXPECT_NE(msg.find(part), std::string::npos) << c.label << ": " << msg;
    }
  }
}

TEST(SafetensorsRead, Folders) {
  TempDir dir;
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(dir.path()); },
                           {dir.path().string(), "neither model.safetensors nor model.safetensors.index.json"}));
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(dir / "missing.safetensors"); },
                           {"missing.safetensors", "cannot read", "No such file"}));
  const std::vector<float> v = {1, 2};
  const TensorToWrite t[] = {{"x", DType::f32, {2}, bytes_of(v)}};
  write_safetensors(dir / "model.safetensors", t);
  SafeTensors st = SafeTensors::open(dir.path());
  EXPECT_EQ(st.at("x").file, dir / "model.safetensors");
  EXPECT_EQ(st.path(), dir.path());
}

// ---------------------------------------------------------------------------------------------------------
// Sharded models

class Sharded : public ::testing::Test {
 protected:
  static constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
  static constexpr const char* kShard2 = "model-00002-of-00002.safetensors";
  void write_shard(const char* file, std::vector<std::string> names, std::map<std::string, std::string> metadata = {}) {
    std::vector<TensorToWrite> t;
    for (const std::string& n : names) t.push_back({n, DType::f32, {2}, bytes_of(values_)});
    write_safetensors(dir_ / file, t, metadata);
  }
  void write_index(const nlohmann::json& weight_map) {
    write_text(dir_ / "model.safetensors.index.json",
               nlohmann::json{{"metadata", {{"total_size", 24}}}, {"weight_map", weight_map}}.dump(2));
  }
  std::filesystem::path index() const { return dir_ / "model.safetensors.index.json"; }

  TempDir dir_;
  std::vector<float> values_ = {1.0f, 2.0f};
};

TEST_F(Sharded, OpensEveryShardOnce) {
  write_shard(kShard1, {"a", "b"}, {{"format", "pt"}});
  write_shard(kShard2, {"c"}, {{"format", "second"}});
  write_index({{"a", kShard1}, {"b", kShard1}, {"c", kShard2}});
  for (const auto& path : {index(), dir_.path()}) {
    SafeTensors st = SafeTensors::open(path);
    EXPECT_EQ(st.files().size(), 2u);
    ASSERT_EQ(st.tensors().size(), 3u);
    EXPECT_EQ(st.tensors()[0].name, "a");
    EXPECT_EQ(st.tensors()[2].name, "c");
    EXPECT_EQ(st.at("b").file, dir_ / kShard1);
    EXPECT_EQ(st.at("c").file, dir_ / kShard2);
    EXPECT_EQ(as_string(st.at("c").bytes), as_string(bytes_of(values_)));
    EXPECT_EQ(st.metadata().at("format"), "pt");  // the first shard's
  }
}

TEST_F(Sharded, IndexMustAgreeWithShards) {
  write_shard(kShard1, {"a", "b"});
  write_shard(kShard2, {"c", "d"});
  write_index({{"a", kShard1}, {"b", kShard1}, {"c", kShard2}, {"d", kShard2}, {"e", kShard2}});
  EXPECT_TRUE(throws_error(
      [&] { SafeTensors::open(index()); },
      {"model.safetensors.index.json", "lists tensor \"e\" in model-00002-of-00002.safetensors", "does not hold it"}));
  write_index({{"a", kShard1}, {"b", kShard1}, {"c", kShard2}});
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); },
                           {"model.safetensors.index.json", "tensor \"d\" is in shard model-00002-of-00002.safetensors",
                            "does not list it"}));
  write_index({{"a", kShard1}, {"b", kShard1}, {"c", kShard2}, {"d", kShard1}});
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); },
                           {"model.safetensors.index.json", "tensor \"d\" is in shard model-00002-of-00002.safetensors",
                            "names model-00001-of-00002.safetensors for it"}));
  write_shard(kShard2, {"b", "c"});
  write_index({{"a", kShard1}, {"b", kShard1}, {"c", kShard2}});
  EXPECT_TRUE(throws_error(
      [&] { SafeTensors::open(index()); },
      {"tensor \"b\" is in two shards", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
}

TEST_F(Sharded, BadIndexOrMissingShard) {
  write_shard(kShard1, {"a"});
  write_index({{"a", kShard1}, {"z", "model-00003-of-00003.safetensors"}});
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); }, {"model-00003-of-00003.safetensors", "cannot read"}));
  write_index({{"a", "../model.safetensors"}});
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); },
                           {"model.safetensors.index.json", "tensor \"a\"", "not a plain file name"}));
  write_index({{"a", 3}});
  EXPECT_TRUE(
      throws_error([&] { SafeTensors::open(index()); }, {"model.safetensors.index.json", "shard is not a string"}));
  write_text(index(), R"({"metadata": {}})");
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); }, {"model.safetensors.index.json", "no \"weight_map\""}));
  write_text(index(), R"({"weight_map": {"a": )");
  EXPECT_TRUE(throws_error([&] { SafeTensors::open(index()); }, {"model.safetensors.index.json", "not valid JSON"}));
}

// ---------------------------------------------------------------------------------------------------------
// MappedFile

TEST(MappedFile, MapsFilesAndRefusesOthers) {
  TempDir dir;
  write_text(dir / "empty", "");
  MappedFile empty(dir / "empty");
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_TRUE(empty.bytes().empty());
  write_text(dir / "abc", "abc");
  MappedFile abc(dir / "abc");
  const std::byte* p = abc.bytes().data();
  MappedFile moved = std::move(abc);
  EXPECT_EQ(moved.bytes().data(), p);
  EXPECT_EQ(as_string(moved.bytes()), "abc");
  EXPECT_TRUE(abc.bytes().empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
  EXPECT_TRUE(throws_error([&] { MappedFile m(dir.path()); }, {dir.path().string(), "not a regular file"}));
  EXPECT_TRUE(throws_error([&] { MappedFile m(dir / "nope"); }, {"nope", "No such file"}));
}

// ---------------------------------------------------------------------------------------------------------
// The Python library's own bytes (tests/fixtures/model_io_reference.py, run where it is installed).

TEST(SafetensorsReference, MatchesPythonLibraryBytes) {
  const auto fixture = test::fixtures_dir() / "model_io_reference.json";
  if (!std::filesystem::exists(fixture))
    GTEST_SKIP() << fixture << " not generated (run tests/fixtures/model_io_reference.py)";
  const nlohmann::json ref = nlohmann::json::parse(test::read_text(fixture));
  TempDir dir;
  for (const nlohmann::json& c : ref.at("safetensors")) {
    const std::string name = c.at("case");
    std::vector<std::vector<std::byte>> data;
    std::vector<TensorToWrite> tensors;
    for (const nlohmann::json& t : c.at("tensors")) data.push_back(test::from_hex(t.at("data_hex").get<std::string>()));
    size_t i = 0;
    bool has_int = false;
    for (const nlohmann::json& t : c.at("tensors")) {
      const std::string d = t.at("dtype");
      const DType dtype = d == "F32" ? DType::f32 : d == "F16" ? DType::f16 : d == "BF16" ? DType::bf16 : DType::i32;
      has_int |= dtype == DType::i32;
      tensors.push_back({t.at("name"), dtype, t.at("shape").get<std::vector<uint64_t>>(), data[i++]});
    }
    const auto metadata = c.at("metadata").get<std::map<std::string, std::string>>();
    const std::string python = as_string(test::from_hex(c.at("file_hex").get<std::string>()));
    EXPECT_EQ(test::hex_of(serialize_safetensors(tensors, metadata, name)), test::hex_of(python)) << name;

    write_text(dir / (name + ".safetensors"), python);
    (void)has_int;  // I32 is read too (token ids in fixtures)
    SafeTensors st = SafeTensors::open(dir / (name + ".safetensors"));
    EXPECT_EQ(st.metadata(), metadata) << name;
    for (const TensorToWrite& t : tensors) {
      EXPECT_EQ(st.at(t.name).shape, t.shape) << name;
      EXPECT_EQ(as_string(st.at(t.name).bytes), as_string(t.bytes)) << name;
    }
  }
}

}  // namespace
}  // namespace ls::model
