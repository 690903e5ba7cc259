// LoRA's own f32 products, where the general GEMM's tiles would sit mostly empty: rank-r products with one
// side of at most kSkinnyMax (shaders/matmul_skinny.comp; the long operand also f16, training's f16
// activations) and the K = rank products (shaders/matmul_short_k.comp). ops/matmul.cpp dispatch_one tries these first (ops/matmul_detail.h).
#include <optional>

#include "ops/common.h"
#include "ops/matmul_detail.h"

namespace ls::ops::detail {

namespace {

bool all_f32(const GemmDispatch& d) {
  return d.a.dtype() == DType::f32 && d.b.dtype() == DType::f32 && d.c.dtype() == DType::f32;
}

// The skinny kernels for these dtypes (`rows`: ROWS_ALONG_K): all f32, or an f16 long operand (an f16
// activation, model/layer_acts.h) beside f32; nullopt for others.
std::optional<vk::Kernel> skinny_kernel(const GemmDispatch& d, bool swap, bool rows) {
  using K = vk::Kernel;
  if (all_f32(d)) return rows ? K::gemm_skinny_rows : K::gemm_skinny_cols;
  if (d.c.dtype() != DType::f32) return std::nullopt;
  const Tensor &long_op = swap ? d.b : d.a, &short_op = swap ? d.a : d.b;
  if (long_op.dtype() != DType::f16 || short_op.dtype() != DType::f32) return std::nullopt;
  if (swap) return rows ? K::gemm_skinny_rows_f16b : K::gemm_skinny_cols_f16b;
  return rows ? K::gemm_skinny_rows_f16a : K::gemm_skinny_cols_f16a;
}

}  // namespace

uint32_t skinny_splits(uint32_t L, uint32_t M, uint32_t N, uint32_t K, uint64_t max_binding) {
  const uint64_t groups = ceil_div(L, 256);
  uint32_t splits = 1;
  const uint64_t most = std::min<uint64_t>(max_binding, vk::Recorder::kSplitRingBytes);
  while (splits < 512 && groups * splits < 1024 && K % (2 * splits) == 0 && K / (2 * splits) >= 8 &&
         uint64_t(2 * splits) * M * N * 4 <= most)
    splits *= 2;
  return splits;
}

bool skinny_dispatch(const GemmDispatch& d) {
  const Gemm& g = d.g;
  const uint32_t M = d.M, N = d.N, K = d.K;
  if (g.batch != 1 || (d.flags & (kBias | kLora)) != 0 || std::min(M, N) > kSkinnyMax || K < 32) return false;
  // One short side, a long reduction: LoRA's rank-r products (shaders/matmul_skinny.comp). L, the long
  // operand, is A unless N is the long side.
  const bool swap = N > kSkinnyMax;
  const uint32_t L = swap ? N : M;
  const bool rows_along_k = (swap ? g.b_sk : g.a_sk) == 1;
  const bool rows_kernel = skinny_rows_fit(L, rows_along_k, d.rec.device().report().subgroup_size);
  const std::optional<vk::Kernel> kernel = skinny_kernel(d, swap, rows_kernel);
  if (!kernel) return false;
  // The short side and the orientation are the kernel's specialization constants (ids 1 and 2).
  const uint32_t S = swap ? M : N, orientation = swap ? 1u : 0u;
  if (rows_kernel) {
    // A workgroup per `rows` long indices (id 3).
    const uint32_t rows = skinny_rows(L);
    d.run(*kernel, d.a, d.params, {ceil_div(L, rows), 1, 1},
          {.local_x = 256, .constants = {S, orientation, rows}});
    return true;
  }
  const vk::Spec spec{.local_x = 256, .constants = {S, orientation}};
  // An invocation per long index walking 8 to 16 of k, K split over up to 1024 workgroups: each walk is
  // a chain of dependent loads, so short walks and many of them (measured on the H100, session 5).
  const uint32_t groups = ceil_div(L, 256);
  const uint32_t splits = skinny_splits(L, M, N, K, d.rec.device().report().max_storage_range);
  if (splits == 1) {
    d.run(*kernel, d.a, d.params, {groups, 1, 1}, spec);
    return true;
  }
  const Tensor partial = d.partial(splits);
  d.run_slices(*kernel, d.a, partial, d.slice_params(splits, K / splits), {groups, 1, splits}, spec);
  d.reduce_slices(partial, splits);
  return true;
}

bool short_k_dispatch(const GemmDispatch& d) {
  const uint64_t MN = uint64_t(d.M) * d.N;
  if (!all_f32(d) || d.g.batch != 1 || (d.flags & kLora) != 0 || d.K > kShortKMax || MN < 4096 ||
      MN >= (uint64_t(1) << 32))
    return false;
  // A short reduction (LoRA's K = rank products): an invocation per output element.
  const uint64_t groups = ceil_div(MN, 256);
  d.run(vk::Kernel::gemm_short_k, d.a, d.params,
        {uint32_t(std::min<uint64_t>(groups, 65535)), uint32_t(ceil_div(groups, 65535)), 1},
        {.local_x = 256, .constants = {d.K}});
  return true;
}

}  // namespace ls::ops::detail
