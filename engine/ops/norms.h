#pragma once
// Row norms. x is viewed as [rows, C] with C its last dimension (e.g. [B, T, C] -> rows = B*T); each
// row is normalised on its own and scaled by per-column weights w [C] (LayerNorm also adds b [C]).
// Dtypes: x and y f32 or f16 (the same); w (and b) f32, f16 or bf16, kept as loaded; the saved
// statistics mean, rstd are [rows] f32 (any shape of `rows` elements). Arithmetic is f32 throughout.
// Backward: dy, x, dx f32; weight gradients f32 [C], ACCUMULATED (+=), summed over rows in a fixed
// order (deterministic). dx must not alias dy or x.
#include <span>

#include "ops/split_sums.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

// RMSNorm (HF Qwen2/Llama): rstd = 1 / sqrt(mean(x^2) + eps) per row, y = (x * rstd) * w.
void rms_norm_forward(vk::Recorder& rec, const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& w,
                      float eps);
// The same of x = a + b (a residual add), x also written (ops::add_forward's sums): the add and the norm in one
// pass. x, a and b f32 (the residual stream) of one shape; y f32 or f16. `x_copy`, where defined (x's shape and
// dtype), gets the sums too: the next residual add's starting value, for a product that adds into it. `b_sums`,
// where defined: b is not read but added up from these partial sums of the product that makes it ([slices·rows,
// cols]; ops/matmul.h matmul_forward_unreduced), in the order its reduce would.
void rms_norm_forward_add(vk::Recorder& rec, const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& a,
                          const Tensor& b, const Tensor& w, float eps, const Tensor& x_copy = {},
                          const SplitSums& b_sums = {});
// dx = rstd * (w*dy - x * rstd^2 * mean(w*dy*x)) per row; dw += sum_rows dy * x * rstd.
// dw is optional: an undefined Tensor skips it (frozen norm weights). accumulate: dx += instead of dx =.
void rms_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dw, const Tensor& dy, const Tensor& x,
                       const Tensor& w, const Tensor& rstd, bool accumulate = false);
// The same with the gradient in two parts, dy + dy2 (two products written side by side instead of one after the
// other; dw not supported), and, with `f16_copy` on a device whose tensor-core products read f16 (coopmat2), dx
// also written as f16 and remembered as its copy (vk::Recorder::remember_copy), so that the product that reads
// dx next does not convert it in a dispatch of its own (ops/matmul.cpp cm2_a_as_f16).
// dy_sums, dy2_sums, where defined: dy or dy2 is not read but added up from these partial sums of the product that
// makes it (ops/matmul.h matmul_backward_x_unreduced), in the order its reduce would.
struct NormBackwardMore {
  Tensor dy2;
  bool f16_copy = false;
  SplitSums dy_sums, dy2_sums;
};
void rms_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const Tensor& x, const Tensor& w,
                       const Tensor& rstd, bool accumulate, const NormBackwardMore& more);

// LayerNorm: mean = mean(x), rstd = 1 / sqrt(mean((x - mean)^2) + eps) per row,
// y = ((x - mean) * rstd) * w + b. b has w's dtype.
void layer_norm_forward(vk::Recorder& rec, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& w, const Tensor& b, float eps);
// xhat = (x - mean) * rstd, g = w * dy: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row;
// dw += sum_rows dy * xhat, db += sum_rows dy. dw and db are optional together (both undefined skips them).
void layer_norm_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy,
                         const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd);

// CPU references: x, y, dx, dy [rows * C] row-major; w, b, dw, db [C] (C = w.size()); mean, rstd [rows].
// Accumulation in double. Weight gradients accumulate; an empty dw/db span skips it. The double
// overloads serve the finite-difference checks.
namespace ref {
void rms_norm_forward(std::span<float> y, std::span<float> rstd, std::span<const float> x, std::span<const float> w,
                      float eps);
void rms_norm_forward(std::span<double> y, std::span<double> rstd, std::span<const double> x,
                      std::span<const double> w, double eps);
void rms_norm_backward(std::span<float> dx, std::span<float> dw, std::span<const float> dy, std::span<const float> x,
                       std::span<const float> w, std::span<const float> rstd);
void rms_norm_backward(std::span<double> dx, std::span<double> dw, std::span<const double> dy,
                       std::span<const double> x, std::span<const double> w, std::span<const double> rstd);

void layer_norm_forward(std::span<float> y, std::span<float> mean, std::span<float> rstd, std::span<const float> x,
                        std::span<const float> w, std::span<const float> b, float eps);
void layer_norm_forward(std::span<double> y, std::span<double> mean, std::span<double> rstd,
                        std::span<const double> x, std::span<const double> w, std::span<const double> b, double eps);
void layer_norm_backward(std::span<float> dx, std::span<float> dw, std::span<float> db, std::span<const float> dy,
                         std::span<const float> x, std::span<const float> w, std::span<const float> mean,
                         std::span<const float> rstd);
void layer_norm_backward(std::span<double> dx, std::span<double> dw, std::span<double> db,
                         std::span<const double> dy, std::span<const double> x, std::span<const double> w,
                         std::span<const double> mean, std::span<const double> rstd);
}  // namespace ref

}  // namespace ls::ops
