// util/parallel.h: parallel_for covers [0, n) exactly once, in at most `threads` contiguous parts of at least
// `min_part` (one part when n is smaller), for empty, tiny and uneven ranges.
#include "util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace ls {
namespace {

TEST(ParallelFor, CoversTheRangeOnceInBoundedParts) {
  for (uint64_t n : {0ull, 1ull, 5ull, 1000ull, 100003ull})
    for (uint64_t min_part : {1ull, 7ull, 1024ull})
      for (unsigned threads : {1u, 2u, 8u}) {
        std::vector<std::atomic<int>> hits(n);
        std::mutex m;
        std::vector<std::pair<uint64_t, uint64_t>> parts;
        parallel_for(n, [&](uint64_t first, uint64_t end) {
          for (uint64_t i = first; i < end; ++i) hits[i]++;
          std::lock_guard lock(m);
          parts.emplace_back(first, end);
        }, min_part, threads);
        const std::string what = "n " + std::to_string(n) + ", min_part " + std::to_string(min_part) + ", threads " +
                                 std::to_string(threads);
        for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << what << " @" << i;
        EXPECT_LE(parts.size(), threads) << what;
        for (const auto& [first, end] : parts) {
          if (end != n) {  // every part but the last is at least min_part long
            EXPECT_GE(end - first, min_part) << what;
          }
        }
        if (n < 2 * min_part) {
          EXPECT_LE(parts.size(), 1u) << what << ": a range under two parts' worth runs alone";
        }
      }
}

}  // namespace
}  // namespace ls
