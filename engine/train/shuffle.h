#pragma once
// Seeded permutations that are the same on every platform: std::mt19937_64's output is fixed by the
// standard, but std::shuffle and std::uniform_int_distribution are not (libstdc++, libc++ and MSVC
// give different orders), so the bounded draw and the Fisher–Yates loop are written here.
#include <cstdint>
#include <random>
#include <vector>

namespace ls::train {

// Independent seeds from one user seed: splitmix64 of (seed, stream). Streams used: an epoch's
// shuffle is stream `epoch`; the validation split and the packing order have their own (kStream*).
uint64_t derive_seed(uint64_t seed, uint64_t stream);
inline constexpr uint64_t kStreamValidationSplit = ~uint64_t(0);
inline constexpr uint64_t kStreamPackOrder = ~uint64_t(1);

// Uniform in [0, n), n > 0, by rejection (no modulo bias).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n);

// A permutation of 0..n-1: Fisher–Yates from the last element down, j = uniform_below(i + 1).
std::vector<uint32_t> permutation(uint32_t n, uint64_t seed);

}  // namespace ls::train
