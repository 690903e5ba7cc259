#include "ops/attention_flash.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
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
uint32_t cm2_threads() {
  static const uint32_t threads = [] {
    const char* forced = std::getenv("LORASTUDIO_FLASH_CM2_THREADS");
    const int n = forced && *forced ? std::atoi(forced) : 0;
    return n == 128 || n == 256 ? uint32_t(n) : 256u;
  }();
  return threads;
}

// The cooperative-matrix-2 kernels' specialization constants (shaders/flash_attention_cm2.comp): each kernel's
// block sizes (forward and dq: the workgroup's queries × a step's keys; dk/dv: the workgroup's keys × a step's
// queries) and the switches kDirect, kHeavyFirst. Measured on the H200 (session 25, calls s25a-s25c, micro with f16
// q/k/v/o): against session 24's kernels (64 × 64 everywhere, f32 dO, f16 inputs through accumulator matrices) the 7B
// shape's forward went 70.6 -> 55.2 us and its backward 290 -> 160, the 0.5B shape's at B1 35.7 -> 21.0 and
// 87.2 -> 58.8, at B8 119 -> 85 and 371 -> 217. Most of it is kDirect (alone, at 64 rows: 7B backward 295 ->
// 180 us, call s25a); 32-row blocks took the registers from 255 (spilling) to 128-252 and gave the rest; 128-key
// steps and 128-row blocks were slower; 16-row blocks looked faster still but their forward gave wrong outputs
// (attention_test, call s25c), so blocks start at 32. Measurement: LORASTUDIO_FLASH_FWD_TILE, _DQ_TILE,
// _DKDV_TILE ("32x64") and LORASTUDIO_FLASH_DIRECT, _HEAVY_FIRST (0 or 1) override them.
struct FlashCm2Knobs {
  uint32_t fwd_rows = 32, fwd_step = 64, dq_rows = 32, dq_step = 64, dkdv_rows = 32, dkdv_step = 64;
  uint32_t direct = 1, heavy_first = 1;
};

const FlashCm2Knobs& cm2_knobs() {
  static const FlashCm2Knobs knobs = [] {
    FlashCm2Knobs k;
    auto tile = [](const char* name, uint32_t& rows, uint32_t& step) {
      const char* v = std::getenv(name);
      unsigned a = 0, b = 0;
      if (v && std::sscanf(v, "%ux%u", &a, &b) == 2 && a >= 32 && b >= 32 && a <= 128 && b <= 128 && a % 16 == 0 &&
          b % 16 == 0) {
        rows = a;
        step = b;
      }
    };
    auto flag = [](const char* name, uint32_t& value) {
      const char* v = std::getenv(name);
      if (v && *v) value = std::string_view(v) == "0" ? 0u : 1u;
    };
    tile("LORASTUDIO_FLASH_FWD_TILE", k.fwd_rows, k.fwd_step);
    tile("LORASTUDIO_FLASH_DQ_TILE", k.dq_rows, k.dq_step);
    tile("LORASTUDIO_FLASH_DKDV_TILE", k.dkdv_rows, k.dkdv_step);
    flag("LORASTUDIO_FLASH_DIRECT", k.direct);
    flag("LORASTUDIO_FLASH_HEAVY_FIRST", k.heavy_first);
    return k;
  }();
  return knobs;
}

// Constants 1-4 of a cm2 kernel: BR, BC, kDirect, kHeavyFirst.
vk::Spec cm2_spec(uint32_t threads, uint32_t br, uint32_t bc) {
  const FlashCm2Knobs& k = cm2_knobs();
  return {.local_x = threads, .constants = {br, bc, k.direct, k.heavy_first}};
}

bool small_heads(const AttentionDims& d) { return d.D <= 64; }

struct FlashPlan {
  FlashKernels kernels;
  FlashTiles tiles;
  uint32_t forward_threads, dq_threads;
  // The cm2 kernels' specialization constants; the others take only their workgroup size.
  std::optional<vk::Spec> forward_spec = {}, dq_spec = {}, dkdv_spec = {};

  vk::Spec forward() const { return forward_spec ? *forward_spec : vk::Spec{.local_x = forward_threads}; }
  vk::Spec dq() const { return dq_spec ? *dq_spec : vk::Spec{.local_x = dq_threads}; }
  vk::Spec dkdv() const { return dkdv_spec ? *dkdv_spec : vk::Spec{.local_x = tiles.dkdv_threads}; }
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
    const FlashCm2Knobs& k = cm2_knobs();
    return {{row[0], row[1], row[2]},
            {k.fwd_rows, k.dq_rows, k.dkdv_rows, threads},
            threads,
            threads,
            cm2_spec(threads, k.fwd_rows, k.fwd_step),
            cm2_spec(threads, k.dq_rows, k.dq_step),
            cm2_spec(threads, k.dkdv_step, k.dkdv_rows)};
  }
  if ((tensor_cores || dtype != DType::f32) && attention_flash_coopmat_fit(device, d, dtype)) {
    using K = vk::Kernel;
    // [GL_KHR_cooperative_matrix][head dim 128]: forward (f32, f16 q, k, v and o), dq, dk and dv.
    static constexpr K kernels[2][2][4] = {
        {{K::flash_attention_coopmat_forward_d64, K::flash_attention_coopmat_forward_f16_d64,
          K::flash_attention_coopmat_backward_dq_d64, K::flash_attention_coopmat_backward_dkdv_d64},
         {K::flash_attention_coopmat_forward_d128, K::flash_attention_coopmat_forward_f16_d128,
          K::flash_attention_coopmat_backward_dq_d128, K::flash_attention_coopmat_backward_dkdv_d128}},
        {{K::flash_attention_coopmat_khr_forward_d64, K::flash_attention_coopmat_khr_forward_f16_d64,
          K::flash_attention_coopmat_khr_backward_dq_d64, K::flash_attention_coopmat_khr_backward_dkdv_d64},
         {K::flash_attention_coopmat_khr_forward_d128, K::flash_attention_coopmat_khr_forward_f16_d128,
          K::flash_attention_coopmat_khr_backward_dq_d128, K::flash_attention_coopmat_khr_backward_dkdv_d128}}};
    const K* row = kernels[device.coopmat_khr() ? 1 : 0][small ? 0 : 1];
    return {{row[dtype == DType::f16 ? 1 : 0], row[2], row[3]}, kTilesCoopmat, kCoopmatForwardThreads,
            kCoopmatDqThreads};
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
  const uint32_t rows = cm2 ? cm2_knobs().dq_rows : kTilesCoopmat.dq_rows;
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
  const uint32_t blocks = ceil_div(d.T, cm2_knobs().fwd_rows);
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

void flash_delta(vk::Recorder& rec, const Tensor& delta, const Tensor& do_, const Tensor& o, const AttentionDims& d,
                 const Tensor& do16, const SplitSums& do_sums) {
  struct DeltaParams {  // = Params in shaders/flash_delta.comp
    uint32_t B, T, H, D, do16;
  } dp{d.B, d.T, d.H, d.D, do16.defined() ? 1u : 0u};
  if (do16.defined())
    require(do16.dtype() == DType::f16 && do16.numel() == do_.numel(), "attention",
            "dO's f16 copy is " + do16.describe() + "; expected the shape of " + do_.describe() + " in f16");
  const uint64_t groups = ceil_div(uint64_t(d.B) * d.T * d.H, 16);  // its kRowsPerGroup
  const uint32_t x = uint32_t(std::min<uint64_t>(groups, 65535));
  vk::Spec spec{.local_x = 256};
  if (do_sums.defined()) {
    require(do_sums.partial.numel() == uint64_t(do_sums.splits) * do_.numel() && do_sums.lanes <= 32, "attention",
            "dO's split sums are " + do_sums.partial.describe() + " in " + std::to_string(do_sums.splits) +
                " slices; expected slices of " + do_.describe());
    spec.constants = {do_sums.splits, do_sums.lanes};
  }
  // Without the copy, binding 3 is unwritten; delta stands in for it.
  rec.dispatch(variant(vk::family::flash_delta, {o.dtype()}, "attention"),
               {in(do_sums.defined() ? do_sums.partial : do_), in(o), out(delta), do16.defined() ? out(do16) : out(delta)},
               dp, {x, uint32_t(ceil_div(groups, uint64_t(x))), 1}, spec);
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
                 params_for(d, scale, false, past.defined(), splits), {ceil_div(d.T, plan.tiles.forward_rows), d.H, d.B * splits},
                 plan.forward());
    flash_combine(rec, o, lse, part, ml, d, splits);
    return;
  }
  // Without a device-side past, binding 5 is unused; lse stands in for it.
  rec.dispatch(plan.kernels.forward, {in(q), in(k), in(v), out(o), out(lse), in(past.defined() ? past : lse)},
               params_for(d, scale, false, past.defined()), {ceil_div(d.T, plan.tiles.forward_rows), d.H, d.B},
               plan.forward());
}

bool flash_backward_reads_delta_pass(vk::Device& device, const AttentionDims& d, DType dtype) {
  return cm2_backward(plan_for(device, d, dtype).kernels);
}

void attention_backward_flash(vk::Recorder& rec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& do_, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const Tensor& lse, const AttentionDims& d, float scale, const SplitSums& do_sums) {
  vk::Device& dev = rec.device();
  const FlashPlan plan = plan_for(dev, d, q.dtype());
  const bool tensor_cores = attention_flash_coopmat_fit(dev, d, DType::f32);
  const uint32_t splits = tensor_cores ? attention_flash_backward_splits(d, flash_cm2_enabled(dev.coopmat2())) : 1;
  // The cooperative-matrix-2 kernels read delta from a pass of its own, so that dk/dv need not wait for dq:
  // both run in one stage (session 19); that pass also leaves dO's f16 copy, which they read. The others' dq
  // kernel writes delta for dk/dv.
  const bool delta_first = cm2_backward(plan.kernels);
  if (do_sums.defined() && !delta_first) fail("attention", "internal: dO's split sums without the delta pass");
  // kScratchAttention: delta [B, H, T], then (split) dq's partials [splits·B, H, T, D], then (cm2) dO in f16.
  const uint64_t delta_floats = flash_delta_floats(d);
  const uint64_t dq_floats = splits > 1 ? uint64_t(splits) * d.B * d.H * d.T * d.D : 0;
  const uint64_t do16_bytes = flash_do16_bytes(d, delta_first);
  const std::shared_ptr<vk::Allocation> scratch =
      rec.scratch((delta_floats + dq_floats) * 4 + do16_bytes, vk::Recorder::kScratchAttention);
  const Tensor slot = Tensor::view(dev, scratch, {uint32_t(delta_floats + dq_floats), 1}, DType::f32);
  const Tensor delta = slot.slice_rows(0, uint64_t(d.B) * d.H * d.T).reshape({d.B, d.H, d.T});
  const Tensor dq_out =
      splits > 1 ? slot.slice_rows(delta_floats, delta_floats + dq_floats).reshape({splits * d.B, d.H, d.T, d.D}) : dq;
  Tensor do_read = do_;  // the dO the dq and dk/dv kernels read
  if (delta_first) {
    const uint64_t first = (delta_floats + dq_floats) * 2, n = uint64_t(d.B) * d.T * d.H * d.D;
    do_read = Tensor::view(dev, scratch, {uint32_t(first + n), 1}, DType::f16)
                  .slice_rows(first, first + n)
                  .reshape({d.B, d.T, d.H, d.D});
    flash_delta(rec, delta, do_, o, d, do_read, do_sums);
  }
  rec.dispatch(plan.kernels.dq,
               {in(q), in(k), in(v), in(o), in(do_read), in(lse), out(dq_out), delta_first ? in(delta) : out(delta)},
               params_for(d, scale, splits > 1, false, splits), {ceil_div(d.T, plan.tiles.dq_rows), d.H, d.B * splits},
               plan.dq());

  const vk::Kernel dkdv = plan.kernels.dkdv;
  const vk::Groups groups{ceil_div(d.S, plan.tiles.dkdv_rows), d.H, d.B * splits};
  if (d.H == d.KV && splits == 1) {  // one query head per kv head: the gradients go straight to dk and dv
    rec.dispatch(dkdv, {in(q), in(k), in(v), in(do_read), in(lse), in(delta), out(dk), out(dv)},
                 params_for(d, scale, false), groups, plan.dkdv());
    return;
  }
  const Shape per_head_shape{splits * d.B, d.H, d.S, d.D};
  const uint64_t per_head_bytes = flash_per_head_bytes(d, splits);
  const Tensor dk_head =
      Tensor::view(dev, rec.scratch(per_head_bytes, vk::Recorder::kScratchAttention + 1), per_head_shape, DType::f32);
  const Tensor dv_head =
      Tensor::view(dev, rec.scratch(per_head_bytes, vk::Recorder::kScratchAttention + 2), per_head_shape, DType::f32);
  rec.dispatch(dkdv, {in(q), in(k), in(v), in(do_read), in(lse), in(delta), out(dk_head), out(dv_head)},
               params_for(d, scale, true, false, splits), groups, plan.dkdv());
  // The sums after both kernels: dq's would otherwise put a barrier between them.
  if (splits > 1) group_sum(rec, dq, dq_out, d.B, d.T, d.H, d.H, d.D, splits);
  group_sum(rec, dk, dk_head, d.B, d.S, d.H, d.KV, d.D, splits);
  group_sum(rec, dv, dv_head, d.B, d.S, d.H, d.KV, d.D, splits);
}

uint64_t flash_delta_floats(const AttentionDims& d) {  // delta's floats, rounded up to keep what follows aligned
  return (uint64_t(d.B) * d.H * d.T + 63) / 64 * 64;
}

uint64_t flash_do16_bytes(const AttentionDims& d, bool cm2_backward) {
  return cm2_backward ? (uint64_t(d.B) * d.T * d.H * d.D * 2 + 255) / 256 * 256 : 0;
}

uint64_t flash_per_head_bytes(const AttentionDims& d, uint32_t splits) {
  return uint64_t(splits) * d.B * d.H * d.S * d.D * 4;
}

}  // namespace ls::ops::detail
