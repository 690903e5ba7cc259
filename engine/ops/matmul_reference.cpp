// The CPU references of ops/matmul.h (namespace ref): plain loops summing in double, what the tests
// compare every product kernel with.
#include <cstddef>
#include <span>

#include "ops/matmul.h"

namespace ls::ops {

namespace ref {

void matmul_forward(std::span<float> y, std::span<const float> x, std::span<const float> w,
                    std::span<const float> bias, size_t M, size_t N, size_t K) {
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      double s = bias.empty() ? 0.0 : bias[n];
      for (size_t k = 0; k < K; ++k) s += double(x[m * K + k]) * w[n * K + k];
      y[m * N + n] = float(s);
    }
}

void matmul_backward_x(std::span<float> dx, std::span<const float> dy, std::span<const float> w, size_t M, size_t N,
                       size_t K) {
  for (size_t m = 0; m < M; ++m)
    for (size_t k = 0; k < K; ++k) {
      double s = 0;
      for (size_t n = 0; n < N; ++n) s += double(dy[m * N + n]) * w[n * K + k];
      dx[m * K + k] = float(s);
    }
}

void matmul_backward_w(std::span<float> dw, std::span<const float> dy, std::span<const float> x, size_t M, size_t N,
                       size_t K, float scale) {
  for (size_t n = 0; n < N; ++n)
    for (size_t k = 0; k < K; ++k) {
      double s = 0;
      for (size_t m = 0; m < M; ++m) s += double(dy[m * N + n]) * x[m * K + k];
      dw[n * K + k] = float(dw[n * K + k] + scale * s);
    }
}

void lora_forward(std::span<float> y, std::span<float> t, std::span<const float> x, std::span<const float> w,
                  std::span<const float> bias, std::span<const float> a, std::span<const float> b, size_t M, size_t N,
                  size_t K, size_t r, float scale) {
  matmul_forward(t, x, a, {}, M, r, K);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      double s = bias.empty() ? 0.0 : bias[n];
      for (size_t k = 0; k < K; ++k) s += double(x[m * K + k]) * w[n * K + k];
      double low = 0;
      for (size_t j = 0; j < r; ++j) low += double(t[m * r + j]) * b[n * r + j];
      y[m * N + n] = float(s + scale * low);
    }
}

}  // namespace ref

}  // namespace ls::ops
