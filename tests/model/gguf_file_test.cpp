// The GGUF writer and reader (model/gguf_writer.h, model/gguf_reader.h): a file with every value type and
// tensors of each type we write reads back equal, bytes and layout as the format says (magic, version,
// data aligned to 32, each tensor's offset a multiple of 32); a callback that hands over the wrong byte
// count fails and leaves no file; truncated or malformed files throw ls::Error naming the file and offset.
// (That llama.cpp reads our files is gguf_llamacpp_test.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "model/gguf_reader.h"
#include "model/gguf_writer.h"
#include "model/model_files.h"

namespace ls::gguf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::throws_error;

template <class T>
TensorToWrite tensor_of(std::string name, TensorType type, std::vector<uint64_t> ne, std::vector<T> data) {
  return {.name = std::move(name), .type = type, .ne = std::move(ne), .write = [data](const ByteSink& sink) {
            // In two pieces, as a streamed tensor would come.
            auto bytes = std::as_bytes(std::span<const T>(data));
            sink(bytes.first(bytes.size() / 2));
            sink(bytes.subspan(bytes.size() / 2));
          }};
}

TEST(GgufFile, WritesAndReadsBackEveryValueTypeAndTensor) {
  TempDir dir;
  const fs::path path = dir / "x.gguf";
  Writer w;
  w.set("general.architecture", std::string("qwen2"));
  w.set("u8", uint8_t(200));
  w.set("i8", int8_t(-5));
  w.set("u16", uint16_t(60000));
  w.set("i16", int16_t(-30000));
  w.set("u32", uint32_t(4000000000u));
  w.set("i32", int32_t(-7));
  w.set("f32", 1.5f);
  w.set("bool", true);
  w.set("u64", uint64_t(1) << 40);
  w.set("i64", int64_t(-1) << 40);
  w.set("f64", 0.1);
  w.set("strings", std::vector<std::string>{"a", "", "ü b"});
  w.set("i32s", std::vector<int32_t>{1, -2, 3});
  w.set("f32s", std::vector<float>{0.25f, -1e9f});
  w.set("u32", uint32_t(7));  // replaced in place
  std::vector<float> f32(3 * 5);
  std::iota(f32.begin(), f32.end(), -3.f);
  std::vector<uint16_t> f16(64 * 2, 0x3c00);
  std::vector<uint8_t> q8(34 * 2 * 3, 0x5a);
  w.add_tensor(tensor_of("a.weight", TensorType::f32, {5, 3}, f32));
  w.add_tensor(tensor_of("b.weight", TensorType::f16, {64, 2}, f16));
  w.add_tensor(tensor_of("c.weight", TensorType::q8_0, {64, 3}, q8));
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  w.write(path, [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); });
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().first, progress.back().second);
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_LE(progress[i - 1].first, progress[i].first);

  const Reader r = Reader::open(path);
  EXPECT_EQ(r.version(), 3u);
  ASSERT_EQ(r.metadata().size(), 15u);
  EXPECT_EQ(r.metadata()[0].first, "general.architecture");
  EXPECT_EQ(std::get<std::string>(*r.find("general.architecture")), "qwen2");
  EXPECT_EQ(std::get<uint8_t>(*r.find("u8")), 200);
  EXPECT_EQ(std::get<int8_t>(*r.find("i8")), -5);
  EXPECT_EQ(std::get<uint16_t>(*r.find("u16")), 60000);
  EXPECT_EQ(std::get<int16_t>(*r.find("i16")), -30000);
  EXPECT_EQ(std::get<uint32_t>(*r.find("u32")), 7u);
  EXPECT_EQ(r.metadata()[5].first, "u32");
  EXPECT_EQ(std::get<int32_t>(*r.find("i32")), -7);
  EXPECT_EQ(std::get<float>(*r.find("f32")), 1.5f);
  EXPECT_EQ(std::get<bool>(*r.find("bool")), true);
  EXPECT_EQ(std::get<uint64_t>(*r.find("u64")), uint64_t(1) << 40);
  EXPECT_EQ(std::get<int64_t>(*r.find("i64")), int64_t(-1) << 40);
  EXPECT_EQ(std::get<double>(*r.find("f64")), 0.1);
  EXPECT_EQ(std::get<std::vector<std::string>>(*r.find("strings")), (std::vector<std::string>{"a", "", "ü b"}));
  EXPECT_EQ(std::get<std::vector<int32_t>>(*r.find("i32s")), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(std::get<std::vector<float>>(*r.find("f32s")), (std::vector<float>{0.25f, -1e9f}));

  ASSERT_EQ(r.tensors().size(), 3u);
  const auto& a = r.tensors()[0];
  EXPECT_EQ(a.name, "a.weight");
  EXPECT_EQ(a.type, uint32_t(TensorType::f32));
  EXPECT_EQ(a.ne, (std::vector<uint64_t>{5, 3}));
  ASSERT_EQ(a.bytes.size(), f32.size() * 4);
  EXPECT_EQ(std::memcmp(a.bytes.data(), f32.data(), a.bytes.size()), 0);
  const auto* c = r.tensor("c.weight");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes.size(), q8.size());
  EXPECT_EQ(std::memcmp(c->bytes.data(), q8.data(), q8.size()), 0);

  // Layout: the magic, and every tensor's data at a multiple of 32 from the start of the file (the data
  // section is aligned and each tensor padded).
  const std::string raw = test::read_text(path);
  EXPECT_EQ(raw.substr(0, 4), "GGUF");
  const auto* base = reinterpret_cast<const std::byte*>(r.tensors()[0].bytes.data());
  for (const auto& t : r.tensors()) EXPECT_EQ((t.bytes.data() - base) % 32, 0) << t.name;
  // Data: 60 bytes padded to 64, 256, 204 padded to 224.
  const size_t data_start = raw.size() - 64 - 256 - 224;
  EXPECT_EQ(data_start % 32, 0u);
  EXPECT_EQ(raw.size() % 32, 0u);
}

TEST(GgufFile, RefusesWrongByteCountsAndLeavesNoFile) {
  TempDir dir;
  const fs::path path = dir / "short.gguf";
  Writer w;
  w.add_tensor(tensor_of("t", TensorType::f32, {4}, std::vector<float>(3, 1.f)));
  EXPECT_TRUE(throws_error([&] { w.write(path); }, {"short.gguf", "\"t\"", "12 of its 16 bytes"}));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 0);

  Writer more;
  more.add_tensor(tensor_of("u", TensorType::f32, {2}, std::vector<float>(3, 1.f)));
  EXPECT_TRUE(throws_error([&] { more.write(path); }, {"\"u\"", "more than its 8 bytes"}));
  EXPECT_FALSE(fs::exists(path));

  EXPECT_TRUE(throws_error([&] { w.add_tensor(tensor_of("t", TensorType::f32, {4}, std::vector<float>(4))); },
                           {"\"t\"", "twice"}));
  EXPECT_TRUE(throws_error([&] { w.add_tensor(tensor_of("q", TensorType::q8_0, {33}, std::vector<float>(4))); },
                           {"\"q\"", "33", "q8_0"}));
}

TEST(GgufFile, MalformedFilesThrowNamingFileAndOffset) {
  TempDir dir;
  const fs::path good = dir / "good.gguf";
  Writer w;
  w.set("general.name", std::string("tiny"));
  w.add_tensor(tensor_of("t", TensorType::f32, {8}, std::vector<float>(8, 2.f)));
  w.write(good);
  const std::string bytes = test::read_text(good);

  test::write_text(dir / "magic.gguf", "GGML" + bytes.substr(4));
  EXPECT_TRUE(throws_error([&] { Reader::open(dir / "magic.gguf"); }, {"magic.gguf", "not a GGUF file"}));
  // Every truncation of the header or the data is refused, never read past the end.
  for (size_t n : {size_t(3), size_t(10), size_t(30), size_t(60), bytes.size() - 1}) {
    test::write_text(dir / "cut.gguf", bytes.substr(0, n));
    EXPECT_TRUE(throws_error([&] { Reader::open(dir / "cut.gguf"); }, {"cut.gguf", "byte "})) << n;
  }
  std::string huge = bytes;
  const uint64_t count = uint64_t(1) << 60;
  std::memcpy(huge.data() + 16, &count, 8);  // the key-value count
  test::write_text(dir / "huge.gguf", huge);
  EXPECT_TRUE(throws_error([&] { Reader::open(dir / "huge.gguf"); }, {"huge.gguf", "key-values"}));
}

}  // namespace
}  // namespace ls::gguf
