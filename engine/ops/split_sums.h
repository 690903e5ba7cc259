#pragma once
// A split product's partial sums, left for the op that reads the product's output to add up itself: the split's
// own reduce (shaders/matmul_splitk_reduce.comp) then needs no stage of its own. ops/matmul.h's *_unreduced
// products make them; ops/norms.h's row kernels take them in place of a tensor they read.
#include <cstdint>

#include "tensor/tensor.h"

namespace ls::ops {

struct SplitSums {
  Tensor partial;       // [splits · M, N] f32: slice s of K's sums at rows s·M .. s·M + M - 1, in the recording's
                        // split scratch (read them before the next split product takes that scratch)
  uint32_t splits = 0;  // 0: none (the product wrote its output)
  uint32_t lanes = 1;   // how its reduce would group the slices (shaders/common/split_sums.glsl): the same bits
  bool defined() const { return splits > 0; }
};

}  // namespace ls::ops
