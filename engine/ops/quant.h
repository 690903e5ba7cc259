#pragma once
// Quantized weights on the device (QLoRA; formats in tensor/quant.h, docs/design.md "Quantized bases"):
// upload, dequantization into a plain weight (the operand of the products for many rows, prefill and training,
// on devices whose kernels cannot read it packed: ops/quant_weight.h quant_in_gemm), and the few-rows product on
// the packed weight (decoding reads 4 or 8 bits a weight).
#include <cstdint>

#include "ops/matmul.h"
#include "ops/quant_weight.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// The dynamic map as a device tensor, for upload_quantized's `map` (make it once per model).
Tensor upload_dynamic_map(vk::Device& device);
QuantWeight upload_quantized(vk::Device& device, const QuantizedHost& q, uint32_t rows, uint32_t cols,
                             const Tensor& map);

// The dtype products read a dequantized weight in on this device: f16 on tensor-core devices (their
// kernels take f16 operands), f32 elsewhere (exact). A quantized layer keeps its bias in it too.
DType dequantized_dtype(const vk::Device& device);

// w [n, cols] = rows [row_begin, row_begin + n) of q, dequantized (f32, f16 or bf16; bit-equal to
// ls::dequantize rounded to w's dtype). Split into several dispatches past the binding limit.
void dequantize_forward(vk::Recorder& rec, const Tensor& w, const QuantWeight& q, uint32_t row_begin = 0);
// q dequantized into this recording's weight scratch (vk::Recorder::kScratchWeight), in
// dequantized_dtype(): valid until the next call records over it (the recorder orders the reuse).
Tensor dequantize_to_scratch(vk::Recorder& rec, const QuantWeight& q);

// y [M, N] (+)= x [M, K] · deq(q)ᵀ (+ bias [N]) for M <= 4, straight from the packed codes. Needs K a
// multiple of 8 and x, y contiguous rows (quant_matvec_fits); bias in dequantized_dtype().
bool quant_matvec_fits(const Tensor& x, const QuantWeight& q);
void quant_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const QuantWeight& q,
                          const Tensor& bias, bool accumulate = false);

// The forward projections of a model whose base is quantized: the forward of a few rows without dropout
// reads the packed codes (quant_matvec_forward, then the adapter's term as its own two small products);
// more rows go to matmul_forward / lora_forward with q as the weight operand (read packed by the tensor-core
// kernels where quant_in_gemm allows, else dequantized into the scratch first). The backward takes q the
// same way (matmul_backward_x, lora_backward). With accumulate, y += ... (as matmul_forward).
void quant_linear_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const QuantWeight& q, const Tensor& bias,
                          bool accumulate = false);
void quant_lora_forward(vk::Recorder& rec, const Tensor& y, const Tensor& t, const Tensor& x, const QuantWeight& q,
                        const Tensor& bias, const Tensor& lora_a, const Tensor& lora_b, float scale,
                        const LoraDropout& dropout = {}, bool accumulate = false);

}  // namespace ls::ops
