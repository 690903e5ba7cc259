#pragma once
// The push constants of the norm kernels (ops/norms.cpp), in a header so that push_block_test can check
// them against the kernels' blocks.
#include <cstdint>

namespace ls::ops::detail {

struct NormParams {  // = Params in shaders/rms_norm.comp and shaders/layer_norm.comp
  uint32_t rows, cols;
  float eps;
};
static_assert(sizeof(NormParams) <= 128);

struct NormBackwardParams {  // = Params in shaders/rms_norm_backward.comp and shaders/layer_norm_backward.comp
  uint32_t rows, cols;
};
static_assert(sizeof(NormBackwardParams) <= 128);

}  // namespace ls::ops::detail
