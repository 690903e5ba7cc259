#pragma once
// Dropout, for LoRA's input (PEFT's lora_dropout): y = x · keep / (1 − p), x and y of any shape.
//
// The mask is a pure function of (seed[0], seed[1], stream, flat element index i), drawn from a
// counter-based generator, so a recorded program replays with a new mask when the host rewrites `seed`
// and needs no mask tensor between the forward and the backward:
//   r    = word i % 4 of Philox4x32-10(counter = {i / 4, 0, stream, 0}, key = {seed[0], seed[1]})
//   keep = r >= ceil(p · 2^32)                 (so P(keep) = 1 − p to within 2^-32; p = 0 keeps all)
// Philox4x32-10 is Salmon et al.'s ("Parallel random numbers: as easy as 1, 2, 3", SC 2011), as Random123
// and torch's CUDA generator define it (10 rounds, multipliers 0xD2511F53 and 0xCD9E8D57, Weyl key bumps
// 0x9E3779B9 and 0xBB67AE85; ref::philox4x32_10 passes Random123's known-answer vectors). The masks are
// not torch's: those also depend on torch's launch shape.
// Kept elements are x · scale with scale = 1 / (1 − p) in f32; dropped ones x · 0 (±0; NaN stays NaN, as
// in torch's x · mask). Computed in f32, stored in x's dtype.
//
// seed: a device tensor of 2 i32 (read as u32; e.g. the run's seed and the step) that the host rewrites
// between replays. stream: tells the dropouts of one step apart (e.g. layer · 7 + target).
// x, y: f32, f16 or bf16, same shape and dtype; y may alias x. p in [0, 1), else ls::Error naming the op.
#include <array>
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

void dropout_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, float p, const Tensor& seed,
                     uint32_t stream);
// dx = dy · keep / (1 − p), or dx += that with accumulate: the forward's mask for the same seed and
// stream (the forward is linear with a diagonal Jacobian of keep · scale). dx may alias dy.
void dropout_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, float p, const Tensor& seed,
                      uint32_t stream, bool accumulate = false);

namespace ref {
// The four output words of Philox4x32-10 for a counter and a key.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);
// ceil(p · 2^32): element i is kept when its word is at least this. p in [0, 1).
uint32_t dropout_threshold(float p);
// Whether element i is kept (the mask both kernels apply).
bool dropout_keep(std::array<uint32_t, 2> seed, uint32_t stream, uint64_t i, float p);
void dropout_forward(std::span<float> y, std::span<const float> x, float p, std::array<uint32_t, 2> seed,
                     uint32_t stream);
void dropout_backward(std::span<float> dx, std::span<const float> dy, float p, std::array<uint32_t, 2> seed,
                      uint32_t stream, bool accumulate = false);
}  // namespace ref

}  // namespace ls::ops
