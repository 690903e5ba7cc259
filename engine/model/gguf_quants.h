#pragma once
// ggml's block formats that GGUF export writes, quantized from f32 rows the way ggml's reference
// quantizers do (ggml-quants.c's quantize_row_*_ref, which llama_model_quantize runs when it has no
// importance matrix): the same search, the same float operations in the same order, so the same bytes
// from the same floats (tests/model/gguf_llamacpp_test checks this against ggml itself).
//   q8_0  32 values: f16 d = max|x| / 127; 32 × i8 round(x / d).                              34 bytes
//   q5_0  32 values: f16 d = x_m / -16 (x_m the value of largest |x|); u32 of 5th bits;
//         16 bytes of low nibbles; q = min(31, trunc(x / d + 16.5)), value d·(q − 16).      22 bytes
//   q4_K  256 values in 8 sub-blocks of 32, value d·sc_j·q − dmin·m_j, q in 0..15: f16 d, f16 dmin,
//         12 bytes of 6-bit sc_j and m_j (get_scale_min_k4's packing), 128 bytes of nibbles (bytes
//         l of each 32-byte group hold sub-blocks 2g (low) and 2g+1 (high)). Each sub-block's (scale,
//         min) is searched by make_qkx2_quants (weights |x| + rms, 21 candidate scales, least squares).  144 bytes
//   q5_K  as q4_K with q in 0..31: f16 d, f16 dmin, 12 bytes of scales, 32 bytes of fifth bits (bit 2g
//         of byte l for value l of sub-block 2g, bit 2g+1 for sub-block 2g+1), 128 bytes of nibbles;
//         16 candidate scales.                                                                  176 bytes
//   q6_K  256 values in 16 sub-blocks of 16, value d·sc_j·(q − 32), q in 0..63: 128 bytes of low
//         nibbles, 64 of high 2-bit pairs, 16 × i8 scales, f16 d. Each sub-block's scale is searched by
//         make_qx_quants (weights x², 19 candidates).                                          210 bytes
#include <cstddef>

#include "model/gguf_types.h"

namespace ls::model {

// Quantizes `n` floats (a multiple of the type's block) into n / block · block_bytes bytes at `out`.
void quantize_row_q8_0(const float* x, size_t n, std::byte* out);
void quantize_row_q5_0(const float* x, size_t n, std::byte* out);
void quantize_row_q4_k(const float* x, size_t n, std::byte* out);
void quantize_row_q5_k(const float* x, size_t n, std::byte* out);
void quantize_row_q6_k(const float* x, size_t n, std::byte* out);

// One of the above by type (q8_0, q5_0, q4_K, q5_K, q6_K); ls::Error for another type.
void quantize_row(gguf::TensorType type, const float* x, size_t n, std::byte* out);

}  // namespace ls::model
