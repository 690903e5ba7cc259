// Row copies with device-side offsets (ops/copy_rows.h) against the CPU reference: bit-exact (a copy).
#include <cstring>

#include "ops/copy_rows.h"
#include "support/testing.h"

namespace ls {
namespace {

class CopyRows : public test::GpuTest {};

std::vector<uint32_t> bits(std::span<const uint8_t> bytes) {
  std::vector<uint32_t> w(bytes.size() / 4);
  std::memcpy(w.data(), bytes.data(), w.size() * 4);
  return w;
}

TEST_F(CopyRows, KvCacheWriteAtDeviceOffsetReplayed) {
  // f16 rows of 6 values (3 words): 5 new rows written into a 40-row cache at `past`, replayed.
  const uint32_t cols = 6, cache_rows = 40, rows = 5;
  auto src = test::tensor_from(dev(), {rows, cols}, DType::f16, test::random_values(rows * cols, 3));
  auto cache = test::tensor_from(dev(), {cache_rows, cols}, DType::f16, test::random_values(cache_rows * cols, 4));
  auto offsets = Tensor::empty_host(dev(), {2}, DType::i32, "offsets");
  vk::Recorder rec(dev());
  ops::copy_rows(rec, cache, src, offsets, {.dst_slot = 1});
  auto program = rec.finish();
  auto expected = bits(download_bytes(cache));
  const auto src_bits = bits(download_bytes(src));
  for (int32_t past : {0, 7, 36}) {  // 36: the last rows fall off the end and are skipped
    std::vector<int32_t> offs{-5, past};
    upload(offsets, offs);
    program.run();
    ops::ref::copy_rows(expected, src_bits, offs, 3, {.dst_slot = 1});
    EXPECT_EQ(bits(download_bytes(cache)), expected) << "past " << past;
  }
}

TEST_F(CopyRows, PicksOneRowAtDeviceOffset) {
  const uint32_t cols = 33, rows = 9;
  auto src = test::tensor_from(dev(), {rows, cols}, DType::f32, test::random_values(rows * cols, 5));
  auto dst = test::poisoned(dev(), {1, cols}, DType::f32);
  auto offsets = test::tensor_from_ints(dev(), {1}, std::vector<int32_t>{6});
  test::run(dev(), [&](vk::Recorder& rec) { ops::copy_rows(rec, dst.t, src, offsets, {.rows = 1, .src_slot = 0}); });
  dst.expect_guards_intact("copy_rows dst");
  auto all = download(src);
  EXPECT_EQ(download(dst.t), std::vector<float>(all.begin() + 6 * cols, all.begin() + 7 * cols));
}

TEST_F(CopyRows, RejectsMismatchedTensors) {
  auto a = Tensor::empty(dev(), {4, 8}, DType::f32);
  auto b = Tensor::empty(dev(), {4, 8}, DType::f16);
  auto c = Tensor::empty(dev(), {4, 3}, DType::f16);
  vk::Recorder rec(dev());
  for (auto* pair : {&b, &c}) {
    try {
      ops::copy_rows(rec, a, *pair, Tensor(), {});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("copy_rows"), std::string::npos) << e.what();
    }
  }
  try {
    ops::copy_rows(rec, a, a, Tensor(), {.dst_slot = 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("offsets"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ls
