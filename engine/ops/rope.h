#pragma once
// Rotary position embedding (RoPE), HF Qwen2/Llama convention (rotate_half: the pairs are (i, i + D/2)).
// x, y: [..., H, D] f32, f16 or bf16 (the leading dims, e.g. B, T, are the tokens; H heads; D head dim,
// even). positions: [tokens] i32, the position id of each token (it carries the offset while decoding
// with a KV cache, and lives on the device so a recorded program can be replayed with new positions).
//   inv_freq[i] = 1 / theta^(2i / D) for i < D/2, computed in f32 exactly as HF does (rope_inv_freq)
//   a = f32(position) * inv_freq[i]  (rounded to f32 like HF; it matters for large positions)
//   y[i] = x[i] cos a - x[i + D/2] sin a,   y[i + D/2] = x[i + D/2] cos a + x[i] sin a
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// y = RoPE(x). y may alias x (in place). Each call uploads a small [D/2] f32 inv_freq table, at record
// time; the recorded program keeps it.
void rope_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& positions, float theta);
// dx = the transpose of RoPE applied to dy (rotation by -a). dx may alias dy.
void rope_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& positions, float theta);

// The same with the inverse frequencies given as a [D/2] f32 tensor (a model's, e.g. with Llama 3's
// rope scaling applied: see model/config.h).
void rope_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& inv_freq);
void rope_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& positions,
                   const Tensor& inv_freq);
// Inference's RoPE and KV-cache write in one dispatch: q [tokens, H, D] rotated in place; k [tokens, KV, D]
// rotated into k_cache [1, S, KV, D] and v [tokens, KV, D] copied into v_cache, token t at cache row
// offsets[slot] + t (offsets: i32 on the device, written between replays; slot < 0: row t); rows past S are
// skipped. All five f32 or f16, one dtype. Bit for bit rope_forward on q and k, then ops::copy_rows of k and v.
// seq_tokens > 0 (batched generation): the tokens are sequences of seq_tokens each, each with a cache of its own,
// k_cache and v_cache [sequences, S, KV, D]: token b·seq_tokens + i goes to row offsets[slot + b] + i of cache b.
void rope_kv_cache_forward(vk::Recorder& rec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                           const Tensor& v_cache, const Tensor& positions, const Tensor& inv_freq, const Tensor& offsets,
                           int32_t slot, uint32_t seq_tokens = 0);

// A device copy of inverse frequencies for the overloads above.
Tensor rope_inv_freq_tensor(vk::Device& device, std::span<const float> inv_freq);

// HF's f32 inverse frequencies: 1 / pow(theta, f32(2i) / f32(D)), every step rounded to f32
// (pow correctly rounded; torch's own pow may differ from it by an ulp).
std::vector<float> rope_inv_freq(uint32_t head_dim, float theta);

namespace ref {
// x, y: [tokens * heads, head_dim] row-major; positions: [tokens]. The angle and its cos/sin are
// computed in f32 as HF does (cos, sin correctly rounded); the rotation in F.
void rope_forward(std::span<float> y, std::span<const float> x, std::span<const int32_t> positions, uint32_t head_dim,
                  float theta);
void rope_forward(std::span<double> y, std::span<const double> x, std::span<const int32_t> positions, uint32_t head_dim,
                  float theta);
void rope_backward(std::span<float> dx, std::span<const float> dy, std::span<const int32_t> positions,
                   uint32_t head_dim, float theta);
void rope_backward(std::span<double> dx, std::span<const double> dy, std::span<const int32_t> positions,
                   uint32_t head_dim, float theta);
// rope_kv_cache_forward: q [tokens·H, D] in place; k_cache, v_cache [S·KV, D] from row (d0 + t)·KV, d0 =
// offsets[slot] (0 for slot < 0, negatives clamped to 0 as on the device); with seq_tokens, [sequences·S·KV, D],
// token b·seq_tokens + i at row b·S + offsets[slot + b] + i.
void rope_kv_cache_forward(std::span<float> q, std::span<const float> k, std::span<const float> v,
                           std::span<float> k_cache, std::span<float> v_cache, std::span<const int32_t> positions,
                           std::span<const int32_t> offsets, int32_t slot, uint32_t head_dim, uint32_t kv_heads,
                           float theta, uint32_t seq_tokens = 0);
}  // namespace ref

}  // namespace ls::ops
