#include "train/shuffle.h"

#include <numeric>
#include <utility>

namespace ls::train {

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  // splitmix64 (Steele, Lea, Flood 2014) over the seed, then over the stream mixed in.
  auto mix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  return mix(mix(seed) ^ stream);
}

uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  // Values below 2^64 mod n would make the low residues more likely; draw again (rarely needed).
  const uint64_t reject_below = (0 - n) % n;
  for (;;) {
    const uint64_t r = rng();
    if (r >= reject_below) return r % n;
  }
}

std::vector<uint32_t> permutation(uint32_t n, uint64_t seed) {
  std::vector<uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  std::mt19937_64 rng(seed);
  for (uint32_t i = n; i > 1; --i) std::swap(p[i - 1], p[uniform_below(rng, i)]);
  return p;
}

}  // namespace ls::train
