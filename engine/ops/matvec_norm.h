#pragma once
// Decoding's norm-fused products (shaders/matvec_norm.comp): RMSNorm of the f32 residual stream folded into
// the few-row products that read it, so that a decoded token's layer runs the input norm with q, k and v,
// and the post-attention norm with gate, up and their activation, each in one dispatch:
//   x̂ = round_act((x * rstd) * w_norm),  rstd = 1 / sqrt(mean(x^2) + eps)      (ops::rms_norm_forward's h)
//   norm_matvec_forward:  y = x̂·Wᵀ (+ bias)                                      (ops::matmul_forward's y)
//   norm_glu_matvec_forward: y = act(round_act(x̂·Wgᵀ)) · round_act(x̂·Wuᵀ)   (gate and up stored, then
//                                                                           ops::silu_mul_forward)
// round_act rounds to y's dtype (the activation type: f32, or f16 to nearest even). x: [M, K] f32 with
// M <= 4 rows (norm_matvec_fits); W, Wg, Wu: [N, K] of one dtype (f32, f16 or bf16), which the bias [N]
// shares; the norm's weight [K] f32, f16 or bf16; y: [M, N] f32 or f16. The results equal the unfused ops' up to the order of
// the f32 sums.
#include <span>

#include "ops/glu.h"
#include "ops/quant_weight.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// Whether the fused kernels take these operands (every weight given; undefined ones are skipped): few
// rows, sizes and strides the 16-byte loads and the staging allow, one dtype for the weights and the bias. The callers fall back
// to the norm and the products apart when not.
bool norm_matvec_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w, std::initializer_list<Tensor> weights);

void norm_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                         const Tensor& w, const Tensor& bias);
void norm_glu_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                             const Tensor& w_gate, const Tensor& w_up, GluActivation activation);

// The same on quantized weights (QLoRA bases, read in their packed form: shaders/quant_matvec_norm.comp): one
// format for gate and up, K a multiple of 8, the bias (optional) f32 or f16. The results equal
// norm_matvec_forward's on the dequantized weights up to the order of the f32 sums and the block scale applied
// to a piece's sum (quant_matvec_forward's rounding).
bool norm_matvec_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w,
                      std::initializer_list<const QuantWeight*> weights, const Tensor& bias = Tensor());
void norm_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                         const QuantWeight& w, const Tensor& bias);
void norm_glu_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                             const QuantWeight& w_gate, const QuantWeight& w_up, GluActivation activation);

// A decoded token's attention inputs in one dispatch (shaders/matvec_norm_qkv.comp): x̂ as above, then
//   q = rope(x̂·Wqᵀ + bq), k = rope(x̂·Wkᵀ + bk), v = x̂·Wvᵀ + bv, each product rounded to the activation type
//   before RoPE, k and v written into the caches at row offsets[slot] + m (token m at positions[m]): what
//   norm_matvec_forward for q, k and v and then ops::rope_kv_cache_forward make.
// q: [..., H, D] (M·H·D values) f32 or f16, the caches' dtype; k_cache, v_cache: [..., S, KV, D]; Wq [H·D, K],
// Wk and Wv [KV·D, K]; the biases all given or none; positions [M] i32; inv_freq [D/2] f32; offsets i32.
// QLoRA bases: packed_q, packed_k and packed_v quantized in one format (read packed, as norm_matvec_forward's
// quantized form reads them) in place of wq, wk and wv; their biases f32 or f16.
struct QkvRope {
  Tensor wq, wk, wv, bq, bk, bv;
  Tensor positions, inv_freq, offsets;
  int32_t slot = 0;
  QuantWeight packed_q, packed_k, packed_v;
  bool packed() const { return packed_q.defined(); }
};
bool norm_qkv_rope_fits(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& x,
                        const Tensor& norm_w, const QkvRope& r);
void norm_qkv_rope_forward(vk::Recorder& rec, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           const Tensor& x, const Tensor& norm_w, float eps, const QkvRope& r);

namespace ref {
// Row-major as above (bias empty: none; y_f16: round x̂ and the gate and up products to f16). Sums in double.
void norm_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                         std::span<const float> w, std::span<const float> bias, bool y_f16);
void norm_glu_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                             std::span<const float> w_gate, std::span<const float> w_up, GluActivation activation,
                             bool y_f16);
}  // namespace ref

}  // namespace ls::ops
