#pragma once
// The step between two decode steps recorded in one program (infer::Generator's bursts of tokens a submit): the
// sampler's token becomes the next forward's input, so that the host reads the tokens once a burst.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// After step k's sample: out_ids[k] = sampled[0] and ids[0] = sampled[0]; for k > 0, positions[0] and
// step[past_slot] grow by one (step 0 decodes at the position the host wrote); rng[2] (the draw counter) grows by
// one; with mark, the token's bit is set in `seen` (the repetition penalty's, ops::sample_seen_words layout). All
// i32: sampled [1], ids [1], positions [1], step [> past_slot], rng [kSampleRngElems], seen
// [sample_seen_words(vocab)], out_ids [> k].
void decode_advance(vk::Recorder& rec, const Tensor& sampled, const Tensor& ids, const Tensor& positions,
                    const Tensor& step, uint32_t past_slot, const Tensor& rng, const Tensor& seen, bool mark,
                    uint32_t vocab, const Tensor& out_ids, uint32_t k);

namespace ref {
// The same on host copies.
void decode_advance(int32_t sampled, std::span<int32_t> ids, std::span<int32_t> positions, std::span<int32_t> step,
                    uint32_t past_slot, std::span<int32_t> rng, std::span<int32_t> seen, bool mark, uint32_t vocab,
                    std::span<int32_t> out_ids, uint32_t k);
}  // namespace ref

}  // namespace ls::ops
