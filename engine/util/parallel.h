#pragma once
// Host work split over the cores: job(first, end) on contiguous parts of [0, n), one thread a part, the
// calling thread taking the first; returns when all are done. Parts are at least `min_part` long (small n
// runs on the calling thread alone).
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace ls {

inline unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

template <class Job>
void parallel_for(uint64_t n, const Job& job, uint64_t min_part = 1024, unsigned threads = host_threads()) {
  const uint64_t parts = std::clamp<uint64_t>(n / std::max<uint64_t>(min_part, 1), 1, std::max(1u, threads));
  const uint64_t per = (n + parts - 1) / parts;
  std::vector<std::jthread> pool;
  for (uint64_t first = per; first < n; first += per) pool.emplace_back([&job, first, n, per] { job(first, std::min(n, first + per)); });
  job(uint64_t(0), std::min(n, per));
}

}  // namespace ls
