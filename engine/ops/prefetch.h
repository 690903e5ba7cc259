#pragma once
// Reading a weight into the GPU's L2 cache beside a stage that leaves the memory bus idle, so that the product
// after it streams that weight from the cache (decoding: o's weight read during the token's attention, which is
// bound by its chains of round trips; model/layer.cpp). Whether it pays depends on the cache being larger than
// the bytes read: ops::decode_prefetch_bytes says how much to read on this device.
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// Workgroups a prefetch of `bytes` takes, and so the words of its sums.
uint32_t prefetch_groups(vk::Device& device, uint64_t bytes);

// Reads src's first min(bytes, src.bytes()) bytes (whole 32-bit words). Each workgroup writes the XOR of the words
// it read to sums (i32, prefetch_groups(...) words); the overload without sums makes its own.
void prefetch_into_cache(vk::Recorder& rec, const Tensor& src, uint64_t bytes, const Tensor& sums);
void prefetch_into_cache(vk::Recorder& rec, const Tensor& src, uint64_t bytes);

// Bytes of a decoded token's next weight to prefetch on this device: LORASTUDIO_DECODE_PREFETCH (MiB; 0 turns it
// off), else 0 (off until measured to pay; bench/RESULTS.md).
uint64_t decode_prefetch_bytes(vk::Device& device);

namespace ref {
// The sums a prefetch of `words` words (the first of src) in `groups` workgroups writes.
std::vector<uint32_t> prefetch_sums(std::span<const uint32_t> words, uint32_t groups);
}  // namespace ref

}  // namespace ls::ops
