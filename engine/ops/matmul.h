#pragma once
// Linear layers: y = x·Wᵀ (+ bias), their two backward products, batched products, and the LoRA
// layer y = x·Wᵀ + bias + s·(x·Aᵀ)·Bᵀ. Sizes: M rows (tokens; all leading dims folded), K inputs,
// N outputs, r LoRA rank. Weights W [N, K] and bias [N] as loaded (f32, f16 or bf16); activations
// f32 or f16; LoRA A [r, K], B [N, r] and their gradients f32; accumulation always f32.
// Any M, N, K (not only tile multiples). A weight or activation larger than the device's
// maxStorageBufferRange is split into several dispatches (rows of W, rows of x, or slices of K).
#include <span>

#include "ops/glu.h"
#include "ops/quant_weight.h"
#include "ops/split_sums.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// The weight operand of a linear layer's products: a tensor as loaded, or a quantized weight (QLoRA, ops/quant.h),
// which the tensor-core kernels read in packed form where quant_in_gemm allows and which is otherwise dequantized
// into the recording's weight scratch first. With a quantized weight the bias has ops::dequantized_dtype.
struct WeightOperand {
  WeightOperand(const Tensor& weight) : w(weight) {}  // NOLINT: implicit, every plain call site passes a tensor
  WeightOperand(const QuantWeight& quantized) : q(&quantized) {}  // NOLINT
  Tensor w;
  const QuantWeight* q = nullptr;  // the caller's, alive for the call
  uint32_t rows() const { return q ? q->rows : w.dim(0); }
  uint32_t cols() const { return q ? q->cols : w.dim(1); }
};

// RoPE (ops/rope.h rope_forward, the same bits) on a product's output, done by its split-K reduce where the product
// splits K into slices (a few hundred rows: training's q and k products at B1), so that no pass of its own follows:
// y's columns are heads of head_dim values; positions [M] i32 and inv_freq [head_dim / 2] f32 as rope_forward takes
// them. `applied` says whether it was: where the product does not split (or LORASTUDIO_ROPE_IN_REDUCE=0), y is
// written unrotated and the caller records rope_forward.
struct RopeInReduce {
  Tensor positions, inv_freq;
  uint32_t head_dim = 0;
  bool applied = false;
};

// y [.., N] = x [.., K] · w [N, K]ᵀ (+ bias [N], same dtype as w; pass Tensor() for none); with accumulate,
// y += ... (a residual add folded into the product: inference's o and down projections). With rope (no accumulate),
// its output rotated where the split's reduce can (RopeInReduce).
void matmul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const WeightOperand& w, const Tensor& bias,
                    bool accumulate = false, RopeInReduce* rope = nullptr);
// dx [.., K] = dy [.., N] · w [N, K]; with accumulate, dx += dy·w.
void matmul_backward_x(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w,
                       bool accumulate = false);
// matmul_forward (no bias, y =) and matmul_backward_x (dx =), except that where the product splits K into slices
// and y (dx) is f32, the slices' partial sums are returned unreduced and y (dx) is NOT written: the caller hands them
// to an op that adds them up as it reads them (ops/norms.h), one stage fewer. Otherwise the product writes its
// output as usual and the result is undefined. LORASTUDIO_SPLIT_INTO_NORM=0 always reduces (measurement).
SplitSums matmul_forward_unreduced(vk::Recorder& rec, const Tensor& y, const Tensor& x, const WeightOperand& w);
SplitSums matmul_backward_x_unreduced(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w);
// dx (+)= dy·w + dt·lora_a: an adapter's dx term (dt [.., r], lora_a [r, K], f32) with the product, in its epilogue
// where the kernel takes one (the shader cores' and the cooperative-matrix-2 kernels, as lora_backward's own dx
// product does), else as a second product after it.
void matmul_backward_x_lora(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w,
                            const Tensor& dt, const Tensor& lora_a, bool accumulate = false);
// The gated MLP's activation (y = act(gate)·up, ops/activations.h) and down's dx product in one: d gate, d up [.., K]
// = the activation's backward (silu_mul_backward, gelu_tanh_mul_backward: the same bits) of dy [.., N] · w [N, K],
// applied in the product's epilogue, so that d y = dy·w is neither written nor read back. gate, up, d gate and
// d up of one dtype (f32 or f16), no two sharing memory. Where no kernel takes it (the tensor-core kernels of
// VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix, the few-row and skinny products, a quantized weight,
// operands past one binding, LORASTUDIO_GLU_EPILOGUE=0; the cooperative-matrix-2 kernel only with
// LORASTUDIO_GLU_EPILOGUE=1, being slower there) records nothing and returns false: the caller records the product
// and the activation's backward itself.
bool matmul_backward_x_glu(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy,
                           const WeightOperand& w, const Tensor& gate, const Tensor& up, GluActivation act);
// dw [N, K] (f32) += scale · dy [.., N]ᵀ · x [.., K]. Parameter gradients accumulate.
void matmul_backward_w(vk::Recorder& rec, const Tensor& dw, const Tensor& dy, const Tensor& x, float scale = 1.0f);

// Dropout on the adapter's input (PEFT's lora_dropout): the adapter sees x̃ = dropout(x) (ops/dropout.h;
// its mask a pure function of seed and stream, so the backward recomputes x̃ instead of keeping it),
// the frozen product still sees x. p = 0: none.
struct LoraDropout {
  float p = 0;
  Tensor seed;          // [2] i32 on the device, rewritten by the host between replays
  uint32_t stream = 0;  // tells the adapted projections of one step apart
  bool active() const { return p > 0; }
};

// t [M, r] (f32, saved for backward) = x̃·Aᵀ;  y = x·Wᵀ + bias + scale·t·Bᵀ  (two dispatches; the
// low-rank term is fused into the base product's epilogue). x̃ = x without dropout. With accumulate, y += ....
void lora_forward(vk::Recorder& rec, const Tensor& y, const Tensor& t, const Tensor& x, const WeightOperand& w,
                  const Tensor& bias, const Tensor& lora_a, const Tensor& lora_b, float scale,
                  const LoraDropout& dropout = {}, bool accumulate = false, RopeInReduce* rope = nullptr);
// dB += u·scale·dyᵀ·t;  dt = scale·dy·B (scratch [M, r] f32);  dA += u·dtᵀ·x̃;  dx = dy·W + dropoutᵀ(dt·A)
// when dx is defined (activation gradient through the frozen weight and the adapter; with accumulate,
// dx += ...). u (grad_unscale) undoes a loss scale the activation gradients carry (see record_train_step).
// With dropout, x̃ and dt·A go through one [M, K] scratch buffer of the recording (Recorder::kScratchDropout).
void lora_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& d_lora_a, const Tensor& d_lora_b,
                   const Tensor& dt, const Tensor& dy, const Tensor& x, const Tensor& t, const WeightOperand& w,
                   const Tensor& lora_a, const Tensor& lora_b, float scale, bool accumulate = false,
                   float grad_unscale = 1.0f, const LoraDropout& dropout = {});

// The strided product behind every function above, for ops that lay out their own operands (attention's
// batched products). For z < batch, z = outer·z_div + inner:
//   C[z](m, n) = alpha·Σ_k A[z](m, k)·B[z](n, k)  (+ beta·C[z](m, n) with accumulate)
// (m, k) of A[z] at outer·a_sz2 + inner·a_sz + m·a_sm + k·a_sk; (n, k) of B[z] at outer·b_sz2 +
// (inner / b_group)·b_sz + n·b_sn + k·b_sk; (m, n) of C[z] at outer·c_sz2 + inner·c_sz + m·c_sm + n.
// A, C f32 or f16; B f32, f16 or bf16. On tensor cores f32 operands are rounded to f16 as they are read.
struct StridedProduct {
  uint32_t M = 0, N = 0, K = 0, batch = 1, z_div = 1;
  uint32_t a_sm = 0, a_sk = 0, b_sn = 0, b_sk = 0, c_sm = 0;
  uint32_t a_sz = 0, b_sz = 0, c_sz = 0, a_sz2 = 0, b_sz2 = 0, c_sz2 = 0, b_group = 1;
  float alpha = 1, beta = 1;
  bool accumulate = false;
};
void matmul_strided(vk::Recorder& rec, const Tensor& c, const Tensor& a, const Tensor& b, const StridedProduct& s);

// Whether this device's products run on the cooperative-matrix-2 kernel, which reads f16 operands: an f32
// activation is converted first, unless a kernel that wrote it left an f16 copy and remembered it here (in
// the recording's kScratchCm2A slot; a contiguous tensor, read as [rows, cols]).
bool cm2_products(const vk::Device& device);
void remember_f16_copy(vk::Recorder& rec, const Tensor& a, std::shared_ptr<vk::Allocation> copy);

namespace ref {
// Row-major, double accumulation. bias may be empty.
void matmul_forward(std::span<float> y, std::span<const float> x, std::span<const float> w,
                    std::span<const float> bias, size_t M, size_t N, size_t K);
void matmul_backward_x(std::span<float> dx, std::span<const float> dy, std::span<const float> w, size_t M, size_t N,
                       size_t K);
void matmul_backward_w(std::span<float> dw, std::span<const float> dy, std::span<const float> x, size_t M, size_t N,
                       size_t K, float scale);  // accumulates
void lora_forward(std::span<float> y, std::span<float> t, std::span<const float> x, std::span<const float> w,
                  std::span<const float> bias, std::span<const float> a, std::span<const float> b, size_t M, size_t N,
                  size_t K, size_t r, float scale);
}  // namespace ref

}  // namespace ls::ops
