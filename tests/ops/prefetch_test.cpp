// The cache prefetch (ops/prefetch.h) reads what it says it reads: each workgroup's XOR of its words against the CPU
// reference, on random words, bit-exact (an XOR has no rounding). That it also speeds the product after it is a
// GPU measurement (bench/RESULTS.md), not a test.
#include <cstring>
#include <random>

#include "ops/prefetch.h"
#include "support/testing.h"

namespace ls {
namespace {

class Prefetch : public test::GpuTest {};

std::vector<uint32_t> words_of(std::span<const uint8_t> bytes) {
  std::vector<uint32_t> w(bytes.size() / 4);
  std::memcpy(w.data(), bytes.data(), w.size() * 4);
  return w;
}

std::vector<int32_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> w(n);
  for (auto& v : w) v = int32_t(rng() | 1u);  // never zero
  return w;
}

TEST_F(Prefetch, EachWorkgroupReadsItsWords) {
  // 300,001 words: 37 workgroups (8,192 words each), the last partly filled, and a tail of one word past the whole
  // 16-byte pieces; then only the first 1,000,000 and 200,000 bytes; then fewer words than a piece.
  const uint32_t n = 300001;
  const Tensor src = test::tensor_from_ints(dev(), {n}, random_words(n, 11));
  const std::vector<uint32_t> all = words_of(download_bytes(src));
  for (uint64_t bytes : {uint64_t(n) * 4, uint64_t(1000000), uint64_t(200000), uint64_t(12)}) {
    const uint32_t groups = ops::prefetch_groups(dev(), bytes);
    auto sums = test::poisoned(dev(), {groups}, DType::i32);
    test::run(dev(), [&](vk::Recorder& rec) { ops::prefetch_into_cache(rec, src, bytes, sums.t); });
    sums.expect_guards_intact("prefetch sums");
    const auto expected = ops::ref::prefetch_sums(std::span(all).first(std::min<uint64_t>(bytes / 4, n)), groups);
    EXPECT_EQ(words_of(download_bytes(sums.t)), expected) << bytes << " bytes, " << groups << " workgroups";
  }
}

TEST_F(Prefetch, ReadsNoMoreThanTheTensor) {
  // Asked for more than the tensor holds: it reads the tensor, in the workgroups of its own size.
  const Tensor src = test::tensor_from_ints(dev(), {1000}, random_words(1000, 12));
  const uint32_t groups = ops::prefetch_groups(dev(), 4000);
  auto sums = test::poisoned(dev(), {groups}, DType::i32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::prefetch_into_cache(rec, src, uint64_t(1) << 30, sums.t); });
  EXPECT_EQ(words_of(download_bytes(sums.t)), ops::ref::prefetch_sums(words_of(download_bytes(src)), groups));
}

TEST_F(Prefetch, RejectsTooFewSums) {
  const Tensor src = test::tensor_from_ints(dev(), {20000}, random_words(20000, 13));
  const Tensor sums = Tensor::empty(dev(), {1}, DType::i32);
  vk::Recorder rec(dev());
  try {
    ops::prefetch_into_cache(rec, src, 80000, sums);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than its 3 workgroups"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ls
