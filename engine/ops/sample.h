#pragma once
// Next-token sampling on the GPU, with only the chosen id read back. The semantics are those of the CPU
// Sampler (infer/sampler.h, transformers' logits processors in order): repetition penalty, temperature,
// top-k, top-p, min-p, then a draw in proportion to exp(score) over the kept tokens; temperature 0 is
// the first maximum after the penalty (torch.argmax). V = vocab size.
//
// The kept set is a prefix of the tokens sorted by score descending (ties: lowest id first), so it is
// found without sorting: a radix descent over the four bytes of an order key of the score, one
// histogram (count and mass per byte value) per dispatch, over all V tokens in parallel. Masses are
// exp(score - max) in 64-bit fixed point (2^-40): exact integer sums, the same whatever the order of the
// atomics, so a seed and counter reproduce their token. Dispatches per token:
//   greedy: 2 (sample_max, sample_greedy)
//   temperature only and/or min-p: 3 (sample_max, sample_partials, sample_draw)
//   top-k or top-p: 7 (+ four descent steps), top-k and top-p: 10 (+ three more for top-p's descent).
// The draw's random number is a counter-based hash of (seed, counter): no state on the device.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// The options as the kernels take them (infer::SamplerOptions without the seed, which is in `rng`).
struct SampleSettings {
  float temperature = 0.0f;         // 0: greedy
  uint32_t top_k = 0;               // 0 or >= V: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off
};

// Words of the i32 `seen` tensor: bit id % 32 of word id / 32 is set when id was seen (repetition penalty).
uint32_t sample_seen_words(uint32_t vocab);
// Sets the bits of `ids` (those in [0, vocab)) in a host copy of `seen`.
void sample_mark_seen(std::span<int32_t> seen, std::span<const int32_t> ids, uint32_t vocab);
// Elements of the i32 `work` tensor that sample_forward needs for this vocabulary (scratch between its
// dispatches; one per concurrently recorded sampler).
uint32_t sample_work_elems(uint32_t vocab);
// The i32 `rng` tensor: {seed low word, seed high word, counter}.
inline constexpr uint32_t kSampleRngElems = 3;
// The most draws of one sample_forward (tests draw many at once; generation draws one). On lavapipe, a
// dispatch of 2^15 draws left the ids past the 17,122nd unwritten, 2^14 were all written: not understood.
inline constexpr uint32_t kSampleMaxDraws = 8192;

// ids [draws] i32: draws tokens from logits [V] f32 (the last row of a forward), with counters counter ..
// counter + draws - 1 (greedy: draws == 1; at most kSampleMaxDraws). seen [sample_seen_words(V)] i32, rng [3] i32, work
// [sample_work_elems(V)] i32. V <= 2^24.
void sample_forward(vk::Recorder& rec, const Tensor& ids, const Tensor& work, const Tensor& logits,
                    const Tensor& seen, const Tensor& rng, const SampleSettings& settings);
// mask [V] i32: 1 for the tokens a draw chooses among, 0 for the others (not greedy). For tests.
void sample_kept(vk::Recorder& rec, const Tensor& mask, const Tensor& work, const Tensor& logits,
                 const Tensor& seen, const Tensor& rng, const SampleSettings& settings);

}  // namespace ls::ops
