#include "ops/argmax.h"

#include <algorithm>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct ArgmaxParams {  // = Params in shaders/argmax.comp
  uint32_t rows;
  uint32_t cols;
};
static_assert(sizeof(ArgmaxParams) <= 128);
}  // namespace

void argmax_forward(vk::Recorder& rec, const Tensor& idx, const Tensor& x) {
  const char* op = "argmax_forward";
  require_dtype(x, {DType::f32, DType::f16, DType::bf16}, op, "x");
  require_matrix(x, op, "x");
  require(x.cols() <= (1u << 24), op, "x is " + x.describe() + "; rows longer than 2^24 are not supported");
  require_row_vector(idx, DType::i32, x.rows(), op, "idx");
  rec.dispatch(variant(vk::family::argmax, {x.dtype()}, op), {in(x), out(idx)},
               ArgmaxParams{.rows = uint32_t(x.rows()), .cols = x.cols()}, grid_stride_rows(x.rows()),
               {.local_x = row_threads_for(x.cols())});
}

namespace ref {
void argmax_forward(std::span<int32_t> idx, std::span<const float> x, uint32_t cols) {
  for (size_t r = 0; r < idx.size(); ++r) {
    const float* row = x.data() + r * cols;
    idx[r] = int32_t(std::max_element(row, row + cols) - row);  // the first maximum
  }
}
}  // namespace ref

}  // namespace ls::ops
