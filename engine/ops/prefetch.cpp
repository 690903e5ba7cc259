#include "ops/prefetch.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct PrefetchParams {  // = `Params` in shaders/prefetch.comp
  uint32_t pieces16, per_group, tail_words;
};
constexpr uint32_t kThreads = 256;
// 16-byte pieces a workgroup reads: one batch of 8 loads a thread (32 KiB), so that every load of a weight that
// fits the cache is in flight at once (a 26 MB weight in ~800 workgroups). Four batches a thread took ~25 us for
// 7B's o on the H100 (1 TB/s; session 44).
constexpr uint32_t kPiecesPerGroup = kThreads * 8;

struct Plan {
  uint64_t words;
  uint32_t pieces16, groups, tail_words;
};
Plan plan_for(uint64_t bytes) {
  const uint64_t words = bytes / 4;
  const uint64_t pieces = words / 4;
  return {words, uint32_t(pieces), std::max(1u, ceil_div(pieces, kPiecesPerGroup)), uint32_t(words - pieces * 4)};
}
}  // namespace

uint32_t prefetch_groups(vk::Device&, uint64_t bytes) { return plan_for(bytes).groups; }

void prefetch_into_cache(vk::Recorder& rec, const Tensor& src, uint64_t bytes, const Tensor& sums) {
  const char* op = "prefetch_into_cache";
  require_defined(src, op, "src");
  require_dtype(sums, {DType::i32}, op, "sums");
  const Plan plan = plan_for(std::min(bytes, src.bytes()));
  require(plan.pieces16 < (1ull << 32) / 4 && plan.words > 0, op,
          "bytes " + std::to_string(bytes) + " of " + src.describe() + ": nothing to read, or more than 16 GiB");
  require(sums.numel() >= plan.groups, op,
          "sums " + sums.describe() + " holds fewer than its " + std::to_string(plan.groups) + " workgroups' words");
  rec.dispatch(vk::Kernel::prefetch, {in(src), out(sums)},
               PrefetchParams{.pieces16 = plan.pieces16, .per_group = kPiecesPerGroup, .tail_words = plan.tail_words},
               {plan.groups, 1, 1}, {.local_x = kThreads});
}

void prefetch_into_cache(vk::Recorder& rec, const Tensor& src, uint64_t bytes) {
  const uint64_t b = std::min(bytes, src.bytes());
  if (b < 4) return;
  const Tensor sums = Tensor::empty(rec.device(), {plan_for(b).groups}, DType::i32, "prefetch sums");
  prefetch_into_cache(rec, src, b, sums);
}

uint64_t decode_prefetch_bytes(vk::Device&) {
  return uint64_t(env_clamped("LORASTUDIO_DECODE_PREFETCH", 0, 1024, 0)) << 20;
}

namespace ref {
std::vector<uint32_t> prefetch_sums(std::span<const uint32_t> words, uint32_t groups) {
  const Plan plan = plan_for(words.size() * 4);
  std::vector<uint32_t> sums(groups, 0);
  for (uint64_t i = 0; i < uint64_t(plan.pieces16) * 4; ++i) sums[i / (4ull * kPiecesPerGroup)] ^= words[i];
  for (uint64_t i = uint64_t(plan.pieces16) * 4; i < words.size(); ++i) sums[0] ^= words[i];
  return sums;
}
}  // namespace ref

}  // namespace ls::ops
