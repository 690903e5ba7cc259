#include "ops/attention_flash.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "ops/attention_group_sum.h"
#include "ops/common.h"

namespace ls::ops::detail {

namespace {

struct FlashParams {  // = Params in shaders/flash_attention.comp and flash_attention_coopmat.comp
  uint32_t B, T, S, H, KV, D;
  float scale;
  uint32_t per_head, past_on_device;
  uint32_t splits = 1;
};
static_assert(sizeof(FlashParams) <= 128);

// Tile shapes per kernel, = BQ / BK and the workgroup size in shaders/flash_attention.comp.
struct FlashTiles {
  uint32_t forward_rows, dq_rows, dkdv_rows, dkdv_threads;
};
struct FlashKernels {
  vk::Kernel forward, dq, dkdv;
};
constexpr FlashTiles kTiles64{.forward_rows = 32, .dq_rows = 32, .dkdv_rows = 16, .dkdv_threads = 256};
constexpr FlashTiles kTiles128{.forward_rows = 16, .dq_rows = 16, .dkdv_rows = 8, .dkdv_threads = 128};
// shaders/flash_attention_coopmat.comp: 64 queries (4 subgroups), 32 queries and 32 keys (2 subgroups).
constexpr FlashTiles kTilesCoopmat{.forward_rows = 64, .dq_rows = 32, .dkdv_rows = 32, .dkdv_threads = 64};
constexpr uint32_t kCoopmatForwardThreads = 128, kCoopmatDqThreads = 64;
// shaders/flash_attention_cm2.comp: BR = BC = 64 queries and keys, every kernel; the workgroup size is its
// specialization constant 0 (LORASTUDIO_FLASH_CM2_THREADS overrides it for measurement). On the H100 (call
// s13a) 256 invocations beat 128 on every micro case but the 0.5B B8 forward (7B backward 322.8 against
// 471.8 us), and both beat the GL_NV_cooperative_matrix kernels: 7B forward 72.0 against 97.1 us, 0.5B
// B1 31.7 against 56.5, 0.5B B8 backward 367.0 against 467.3.
constexpr uint32_t kCm2Rows = 64;

uint32_t cm2_threads() {
  static const uint32_t threads = [] {
    const char* forced = std::getenv("LORASTUDIO_FLASH_CM2_THREADS");
    const int n = forced && *forced ? std::atoi(forced) : 0;
    return n == 128 || n == 256 ? uint32_t(n) : 256u;
  }();
  return threads;
}

bool small_heads(const AttentionDims& d) { return d.D <= 64; }

struct FlashPlan {
  FlashKernels kernels;
  FlashTiles tiles;
  uint32_t forward_threads, dq_threads;
};

// Whether these are the cooperative-matrix-2 kernels, whose dq reads delta (ops::detail::flash_delta) instead of
// writing it.
bool cm2_backward(const FlashKernels& k) {
  using K = vk::Kernel;
  for (K cm2 : {K::flash_attention_cm2_backward_dq_d64, K::flash_attention_cm2_backward_dq_f16_d64,
                K::flash_attention_cm2_backward_dq_d128, K::flash_attention_cm2_backward_dq_f16_d128})
    if (k.dq == cm2) return true;
  return false;
}

FlashPlan plan_for(vk::Device& device, const AttentionDims& d, DType dtype, bool tensor_cores = true) {
  const bool small = small_heads(d);
  if ((tensor_cores || dtype != DType::f32) && attention_flash_coopmat_fit(device, d, dtype) &&
      flash_cm2_enabled(device.coopmat2())) {
    using K = vk::Kernel;
    // [head dim 128][f16 q, k, v and o]: forward, dq, dk and dv.
    static constexpr K kernels[2][2][3] = {
        {{K::flash_attention_cm2_forward_d64, K::flash_attention_cm2_backward_dq_d64,
          K::flash_attention_cm2_backward_dkdv_d64},
         {K::flash_attention_cm2_forward_f16_d64, K::flash_attention_cm2_backward_dq_f16_d64,
          K::flash_attention_cm2_backward_dkdv_f16_d64}},
        {{K::flash_attention_cm2_forward_d128, K::flash_attention_cm2_backward_dq_d128,
          K::flash_attention_cm2_backward_dkdv_d128},
         {K::flash_attention_cm2_forward_f16_d128, K::flash_attention_cm2_backward_dq_f16_d128,
          K::flash_attention_cm2_backward_dkdv_f16_d128}}};
    const K* row = kernels[small ? 0 : 1][dtype == DType::f16 ? 1 : 0];
    const uint32_t threads = cm2_threads();
    return {{row[0], row[1], row[2]},
            {kCm2Rows, kCm2Rows, kCm2Rows, threads},
            threads,
            threads};
  }
  if ((tensor_cores || dtype != DType::f32) && attention_flash_coopmat_fit(device, d, dtype)) {
    const FlashKernels k = small ? FlashKernels{vk::Kernel::flash_attention_coopmat_forward_d64,
                                                vk::Kernel::flash_attention_coopmat_backward_dq_d64,
                                                vk::Kernel::flash_attention_coopmat_backward_dkdv_d64}
                                 : FlashKernels{vk::Kernel::flash_attention_coopmat_forward_d128,
                                                vk::Kernel::flash_attention_coopmat_backward_dq_d128,
                                                vk::Kernel::flash_attention_coopmat_backward_dkdv_d128};
    FlashPlan plan{k, kTilesCoopmat, kCoopmatForwardThreads, kCoopmatDqThreads};
    if (dtype == DType::f16)
      plan.kernels.forward = small ? vk::Kernel::flash_attention_coopmat_forward_f16_d64
                                   : vk::Kernel::flash_attention_coopmat_forward_f16_d128;
    return plan;
  }
  const FlashKernels k =
      small ? FlashKernels{vk::Kernel::flash_attention_forward_d64, vk::Kernel::flash_attention_backward_dq_d64,
                           vk::Kernel::flash_attention_backward_dkdv_d64}
            : FlashKernels{vk::Kernel::flash_attention_forward_d128, vk::Kernel::flash_attention_backward_dq_d128,
                           vk::Kernel::flash_attention_backward_dkdv_d128};
  return {k, small ? kTiles64 : kTiles128, 256, 256};
}

FlashParams params_for(const AttentionDims& d, float scale, bool per_head, bool past_on_device = false,
                       uint32_t splits = 1) {
  return {d.B, d.T, d.S, d.H, d.KV, d.D, scale, per_head ? 1u : 0u, past_on_device ? 1u : 0u, splits};
}

// y [B, T, KV, D] = the sum over `slices` and over each group of H / KV heads of x [slices·B, H, T, D].
void group_sum(vk::Recorder& rec, const Tensor& y, const Tensor& x, uint32_t B, uint32_t T, uint32_t H, uint32_t KV,
               uint32_t D, uint32_t slices) {
  const uint64_t total = uint64_t(B) * T * KV * D;
  const GroupSumParams sum{uint32_t(total), T, KV, D, H / KV, slices};
  const vk::Groups groups{uint32_t(std::min<uint64_t>(ceil_div(total, 256), 65535)), 1, 1};
  rec.dispatch(vk::Kernel::attention_group_sum, {in(x), out(y)}, sum, groups, {.local_x = 256});
}

bool flash_shapes(vk::Device& device, const AttentionDims& d) {
  return d.D % 4 == 0 && d.D <= 128 && device.report().subgroup_size >= 8 && d.H <= 65535 && d.B <= 65535;
}
}  // namespace

// Where B·H·T/32 workgroups (of 2 subgroups) leave most of a large GPU's schedulers idle, split to about
// kFlashTargetGroups. Measured on the H100 (132 SMs; call s11b) with the GL_NV_cooperative_matrix kernels: the 0.5B
// shape at B1 (224 workgroups, head dim 64) went from 2.01 + 2.07 to 1.32 + 1.52 ms a step with 4 splits, plus 0.6
// ms of sums; the 7B shape (448 workgroups, head dim 128) lost time with 3 (4.93 + 5.18 -> 5.11 + 5.66 ms, plus
// sums). The cooperative-matrix-2 kernels' 64-row blocks give those shapes 112 and 224 workgroups, and unsplit they
// are faster (H200, session 23 call s23d, LORASTUDIO_FLASH_SPLITS=1 against the 4 of a threshold of 256 in the
// same call): 0.5B B1 16.87 / 17.02 -> 16.75 ms a step, 7B 87.97 / 87.83 -> 85.55 ms. Only smaller grids split.
constexpr uint32_t kFlashSplitBelowGroups = 100, kFlashTargetGroups = 1024, kFlashMaxSplits = 4;

uint32_t attention_flash_backward_splits(const AttentionDims& d, bool cm2) {
  static const char* forced = std::getenv("LORASTUDIO_FLASH_SPLITS");  // measurement: a fixed count
  const uint32_t rows = cm2 ? kCm2Rows : kTilesCoopmat.dq_rows;
  const uint64_t groups = uint64_t(ceil_div(d.T, rows)) * d.H * d.B;
  const uint32_t blocks = ceil_div(d.T, rows);  // blocks of the other operand
  uint32_t splits = groups >= kFlashSplitBelowGroups
                        ? 1
                        : uint32_t(std::min<uint64_t>(ceil_div(kFlashTargetGroups, groups), kFlashMaxSplits));
  if (forced && *forced) splits = uint32_t(std::max(1, std::atoi(forced)));
  return std::max(1u, std::min(splits, std::max(1u, blocks / 2)));
}

bool attention_flash_fit(vk::Device& device, const AttentionDims& d, DType dtype) {
  return (dtype == DType::f32 || attention_flash_coopmat_fit(device, d, dtype)) && flash_shapes(device, d);
}

bool attention_flash_f16_kernels(const AttentionDims& d) {
  return !d.window && d.D % 16 == 0 && d.D <= 128 && flash_cm2_enabled(true);
}

bool attention_flash_backward_f16_fit(vk::Device& device, const AttentionDims& d) {
  return attention_flash_f16_kernels(d) && attention_flash_coopmat_fit(device, d, DType::f16) &&
         flash_cm2_enabled(device.coopmat2());
}

bool flash_cm2_enabled(bool device_coopmat2) {
  static const bool off = [] {
    const char* v = std::getenv("LORASTUDIO_FLASH_CM2");  // measurement: 0 keeps the coopmat kernels
    return v && std::string_view(v) == "0";
  }();
  return device_coopmat2 && !off && vk::kernel_built(vk::Kernel::flash_attention_cm2_backward_dkdv_d128);
}

// Sequences of fewer than 16 queries stay on the f32 shader cores: a 16-row matrix would be mostly
// padding, and f32 keeps tiny cases (the gradient checks of tests/model) exact, as with the products path.
bool attention_flash_coopmat_fit(vk::Device& device, const AttentionDims& d, DType dtype) {
  return device.coopmat() && (dtype == DType::f32 || dtype == DType::f16) && d.D % 16 == 0 && d.T >= 16 &&
         flash_shapes(device, d);
}

// The forward splits only where its query blocks leave SMs idle: measured on the H100 (session 18, call 2, in the
// step), the 0.5B shape's 112 workgroups took 50.9 us unsplit against 32.2 + 9.7 (the sum) in 4, but the 7B
// shape's 224 took 93 us unsplit against 77 + 22 in 4.
constexpr uint32_t kFlashForwardSplitBelowGroups = 132, kFlashForwardTargetGroups = 512;

uint32_t attention_flash_forward_splits(const AttentionDims& d, bool cm2_kernels) {
  static const char* forced = std::getenv("LORASTUDIO_FLASH_FORWARD_SPLITS");  // measurement: 1 turns it off
  if (!cm2_kernels) return 1;
  if (forced && *forced) return uint32_t(std::clamp(std::atoi(forced), 1, 16));
  const uint32_t blocks = ceil_div(d.T, kCm2Rows);
  const uint64_t groups = uint64_t(blocks) * d.H * d.B;
  if (groups >= kFlashForwardSplitBelowGroups) return 1;
  const uint32_t splits = uint32_t(std::min<uint64_t>(ceil_div(kFlashForwardTargetGroups, groups), kFlashMaxSplits));
  return std::max(1u, std::min(splits, std::max(1u, blocks / 2)));
}

uint64_t flash_forward_split_bytes(const AttentionDims& d, uint32_t splits) {
  return splits > 1 ? uint64_t(splits) * d.B * d.H * d.T * d.D * 4 : 0;
}

uint64_t flash_forward_stat_bytes(const AttentionDims& d, uint32_t splits) {  // (max, sum) a row, f32
  return splits > 1 ? uint64_t(splits) * d.B * d.H * d.T * 2 * 4 : 0;
}

void flash_delta(vk::Recorder& rec, const Tensor& delta, const Tensor& do_, const Tensor& o, const AttentionDims& d) {
  struct DeltaParams {  // = Params in shaders/flash_delta.comp
    uint32_t B, T, H, D;
  } dp{d.B, d.T, d.H, d.D};
  const uint64_t groups = ceil_div(uint64_t(d.B) * d.T * d.H, 16);  // its kRowsPerGroup
  const uint32_t x = uint32_t(std::min<uint64_t>(groups, 65535));
  rec.dispatch(variant(vk::family::flash_delta, {o.dtype()}, "attention"), {in(do_), in(o), out(delta)}, dp,
               {x, uint32_t(ceil_div(groups, uint64_t(x))), 1}, {.local_x = 256});
}

void flash_combine(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& part, const Tensor& ml,
                   const AttentionDims& d, uint32_t splits) {
  struct CombineParams {  // = Params in shaders/flash_combine.comp
    uint32_t total, B, T, H, D, splits;
  } cp{uint32_t(uint64_t(d.B) * d.H * d.T * d.D), d.B, d.T, d.H, d.D, splits};
  rec.dispatch(variant(vk::family::flash_combine, {o.dtype()}, "attention"), {in(part), in(ml), out(o), out(lse)}, cp,
               {uint32_t(std::min<uint64_t>(ceil_div(cp.total, 256), 65535)), 1, 1}, {.local_x = 256});
}

void attention_forward_flash(vk::Recorder& rec, const Tensor& o, const Tensor& lse, const Tensor& q, const Tensor& k,
                             const Tensor& v, const AttentionDims& d, float scale, const Tensor& past,
                             bool tensor_cores) {
  const FlashPlan plan = plan_for(rec.device(), d, q.dtype(), tensor_cores);
  vk::Device& dev = rec.device();
  const bool cm2_kernels = (tensor_cores || q.dtype() != DType::f32) && attention_flash_coopmat_fit(dev, d, q.dtype()) &&
                           flash_cm2_enabled(dev.coopmat2());
  const uint32_t splits = attention_flash_forward_splits(d, cm2_kernels);
  if (splits > 1) {
    // Each query block's keys over `splits` workgroups (the last block of 512 queries walked 8 key blocks in
    // one: 50 us for the 0.5B shape's whole forward, session 18), then their sum. The partials take the
    // slots of the backward's per-head gradients (as large, and free again before it).
    using K = vk::Kernel;
    static constexpr K kSplit[2][2] = {
        {K::flash_attention_cm2_forward_split_d64, K::flash_attention_cm2_forward_split_f16_d64},
        {K::flash_attention_cm2_forward_split_d128, K::flash_attention_cm2_forward_split_f16_d128}};
    const uint64_t rows = uint64_t(splits) * d.B * d.H * d.T;
    const Tensor part = Tensor::view(dev, rec.scratch(flash_forward_split_bytes(d, splits), vk::Recorder::kScratchAttention + 1),
                                     {uint32_t(rows), d.D}, DType::f32);
    const Tensor ml = Tensor::view(dev, rec.scratch(flash_forward_stat_bytes(d, splits), vk::Recorder::kScratchAttention + 2),
                                   {uint32_t(rows), 2}, DType::f32);
    // Without a device-side past, binding 5 is unused; q stands in for it.
    rec.dispatch(kSplit[small_heads(d) ? 0 : 1][q.dtype() == DType::f16 ? 1 : 0],
                 {in(q), in(k), in(v), out(part), out(ml), in(past.defined() ? past : q)},
                 params_for(d, scale, false, past.defined(), splits), {ceil_div(d.T, kCm2Rows), d.H, d.B * splits},
                 {.local_x = plan.forward_threads});
    flash_combine(rec, o, lse, part, ml, d, splits);
    return;
  }
  // Without a device-side past, binding 5 is unused; lse stands in for it.
  rec.dispatch(plan.kernels.forward, {in(q), in(k), in(v), out(o), out(lse), in(past.defined() ? past : lse)},
               params_for(d, scale, false, past.defined()), {ceil_div(d.T, plan.tiles.forward_rows), d.H, d.B},
               {.local_x = plan.forward_threads});
}

void attention_backward_flash(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const Tensor& lse, const AttentionDims& d, float scale) {
  vk::Device& dev = rec.device();
  const FlashPlan plan = plan_for(dev, d, q.dtype());
  const bool tensor_cores = attention_flash_coopmat_fit(dev, d, DType::f32);
  const uint32_t splits = tensor_cores ? attention_flash_backward_splits(d, flash_cm2_enabled(dev.coopmat2())) : 1;
  // kScratchAttention: delta [B, H, T], then (split) dq's partials [splits·B, H, T, D].
  const uint64_t delta_floats = flash_delta_floats(d);
  const uint64_t dq_floats = splits > 1 ? uint64_t(splits) * d.B * d.H * d.T * d.D : 0;
  const Tensor slot = Tensor::view(dev, rec.scratch((delta_floats + dq_floats) * 4, vk::Recorder::kScratchAttention),
                                   {uint32_t(delta_floats + dq_floats), 1}, DType::f32);
  const Tensor delta = slot.slice_rows(0, uint64_t(d.B) * d.H * d.T).reshape({d.B, d.H, d.T});
  const Tensor dq_out =
      splits > 1 ? slot.slice_rows(delta_floats, delta_floats + dq_floats).reshape({splits * d.B, d.H, d.T, d.D}) : dq;
  // The cooperative-matrix-2 kernels read delta from a pass of its own, so that dk/dv need not wait for dq:
  // both run in one stage (session 19). The others' dq kernel writes delta for dk/dv.
  const bool delta_first = cm2_backward(plan.kernels);
  if (delta_first) flash_delta(rec, delta, do_, o, d);
  rec.dispatch(plan.kernels.dq,
               {in(q), in(k), in(v), in(o), in(do_), in(lse), out(dq_out), delta_first ? in(delta) : out(delta)},
               params_for(d, scale, splits > 1, false, splits), {ceil_div(d.T, plan.tiles.dq_rows), d.H, d.B * splits},
               {.local_x = plan.dq_threads});

  const vk::Kernel dkdv = plan.kernels.dkdv;
  const vk::Groups groups{ceil_div(d.S, plan.tiles.dkdv_rows), d.H, d.B * splits};
  if (d.H == d.KV && splits == 1) {  // one query head per kv head: the gradients go straight to dk and dv
    rec.dispatch(dkdv, {in(q), in(k), in(v), in(do_), in(lse), in(delta), out(dk), out(dv)},
                 params_for(d, scale, false), groups, {.local_x = plan.tiles.dkdv_threads});
    return;
  }
  const Shape per_head_shape{splits * d.B, d.H, d.S, d.D};
  const uint64_t per_head_bytes = flash_per_head_bytes(d, splits);
  const Tensor dk_head =
      Tensor::view(dev, rec.scratch(per_head_bytes, vk::Recorder::kScratchAttention + 1), per_head_shape, DType::f32);
  const Tensor dv_head =
      Tensor::view(dev, rec.scratch(per_head_bytes, vk::Recorder::kScratchAttention + 2), per_head_shape, DType::f32);
  rec.dispatch(dkdv, {in(q), in(k), in(v), in(do_), in(lse), in(delta), out(dk_head), out(dv_head)},
               params_for(d, scale, true, false, splits), groups, {.local_x = plan.tiles.dkdv_threads});
  // The sums after both kernels: dq's would otherwise put a barrier between them.
  if (splits > 1) group_sum(rec, dq, dq_out, d.B, d.T, d.H, d.H, d.D, splits);
  group_sum(rec, dk, dk_head, d.B, d.S, d.H, d.KV, d.D, splits);
  group_sum(rec, dv, dv_head, d.B, d.S, d.H, d.KV, d.D, splits);
}

uint64_t flash_delta_floats(const AttentionDims& d) {  // delta's floats, rounded up to keep what follows aligned
  return (uint64_t(d.B) * d.H * d.T + 63) / 64 * 64;
}

uint64_t flash_per_head_bytes(const AttentionDims& d, uint32_t splits) {
  return uint64_t(splits) * d.B * d.H * d.S * d.D * 4;
}

}  // namespace ls::ops::detail
