#pragma once
// ops/matmul.cpp's internals that other files share: the products' push constants and layout (Gemm), one
// dispatch of a product (GemmDispatch) and the paths of ops/matmul_skinny.cpp, and the rules
// train/step_scratch.cpp walks a training step's products by to size its scratch without a device.
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "ops/matmul.h"
#include "ops/quant_weight.h"
#include "ops/split_sums.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops::detail {

struct GemmParams {  // = `Params` in shaders/matmul.comp
  uint32_t M, N, K;
  uint32_t a_sm, a_sk, b_sn, b_sk, c_sm;
  uint32_t a_sz, b_sz, c_sz;
  float alpha, beta;
  uint32_t flags;
  uint32_t rank;
  float lora_scale;
  uint32_t z_div;
  uint32_t a_sz2, b_sz2, c_sz2;
  uint32_t b_group;
  uint32_t k_last;
  float q_offset;
};
static_assert(sizeof(GemmParams) <= 128);
constexpr uint32_t kBias = 1, kAccumulate = 2, kLora = 4, kLoraByRank = 8;

// The few-row products (shaders/matvec8.comp, matvec_norm*.comp) split an output column over 1, 2, 4 or 8
// subgroups: the fewest that give kMatvecMinGroups workgroups (two an SM on an H100 or H200), no more than a
// workgroup's `subgroups` nor than the K / (8 · subgroup_size) 16-byte pieces a lane reads allow.
constexpr uint32_t kMatvecMinGroups = 264;
uint32_t matvec_split(uint32_t N, uint32_t K, uint32_t subgroup_size, uint32_t subgroups,
                      uint32_t min_groups = kMatvecMinGroups);
// shaders/matvec8.comp's (a decoded token's o and down products; the persistent layer's same stages): twice the
// workgroups, four an SM. On the H100 (session 41) the 7B o and down products took 39.4 us a dispatch on average
// (with the lm head) against 42.4; the norm-fused products lost with more (q/k/v 20.3 -> 27.6 us).
uint32_t matvec8_split(uint32_t N, uint32_t K, uint32_t subgroup_size, uint32_t subgroups);
// Pieces of a weight row a lane of those products loads before it sums any (their kDepth, 1-4): 2 unless
// LORASTUDIO_MATVEC_DEPTH sets it (measurement; the same sums in the same order whatever it is). On the H100 (session
// 41) 2 took 7B decode from 6,558 to 6,157 µs of GPU time a token; 4 lost on the down product (65 µs against 55).
uint32_t matvec_depth();
// The rows the few-row products' loops run to (their kMaxRows constant): the product's own M, so that a decoded
// token's pipelines keep no registers for rows they do not have (the same sums either way); LORASTUDIO_ROWS_SPEC=0
// gives 4, the most they take, for every M (measurement). On the H100 (session 46) M's own rows took a 7B nf4
// token from 4,787 to 4,467 µs of GPU time (registers: gate/up 58 -> 45, o/down 48 -> 32) and a bf16 one from
// 6,010 to 5,943 µs.
uint32_t rows_constant(uint32_t M);
// The words of nf4 codes in a lane's piece of the packed few-row products (their kPieceWords: 1, 2 or 4, i.e. 8, 16
// or 32 values; one load each), where K and every weight's codes offset allow it (else fewer): for
// shaders/quant_matvec8.comp (o, down) 2, or LORASTUDIO_NF4_WORDS; for quant_matvec_norm.comp (gate/up with the
// norm) 1, or LORASTUDIO_NF4_NORM_WORDS (both measurement). More than one sums a piece's groups before its block
// scale, so the bits differ from one word's (within the tests' tolerance). On the H100 (session 46, 7B nf4 decode)
// 2 words took o/down from 25.7 to 21.9 us a dispatch, 4 to 22.6; gate/up lost with both (61.4 -> 64.5, 69.3).
enum class PiecesOf { matvec8, norm_matvec };
uint32_t nf4_piece_words(PiecesOf kernel, uint32_t K, std::initializer_list<const QuantWeight*> weights);

// The scalar GEMM's output tile (shaders/matmul.comp).
constexpr uint32_t kTile = 64;

// The other products' split-K, on the scalar path and NV_cooperative_matrix's tiles: how many slices of K
// a product with `tiles` output tiles is split into, enough to give the GPU about two waves of workgroups
// when one K loop per tile would leave most of it idle, each slice at least 128 long and a multiple of 16
// (aligned 16-byte loads), the partial sums within one binding.
uint32_t split_k(uint64_t tiles, uint32_t M, uint32_t N, uint32_t K, uint64_t max_binding);

// The workgroup-scope kernels of VK_NV_cooperative_matrix2 (shaders/matmul_coopmat2.comp), by tile
// (BM rows of C, the tokens, × BN columns, the output features, on `threads` invocations).
enum class Cm2Tile : uint32_t { l, t, m, s, w, h, d, g };
struct Cm2TileShape {
  uint32_t bm, bn, threads;
};
inline constexpr Cm2TileShape kCm2Tiles[] = {{128, 256, 256}, {256, 128, 256}, {128, 128, 256},
                                             {64, 64, 128},   {64, 128, 128},  {128, 64, 128}, {16, 128, 128},
                                             {192, 64, 128}};
// The tile ops/matmul.cpp's rule gives an M×N×K product on a GPU of `sms` multiprocessors (its comment says why).
Cm2Tile cm2_tile(uint32_t M, uint32_t N, uint32_t K, uint64_t sms);
// A tile's invocations as ops/matmul.cpp's rule sets them (cm2_spec, which says why), for that many workgroups
// on a GPU of `sms` multiprocessors.
uint32_t cm2_rule_threads(Cm2Tile tile, uint64_t workgroups, uint64_t sms);
// The K steps (of the kernels' 64) a trip of the unrolled K loop takes for a slice of `k_steps` steps, as
// ops/matmul.cpp's rule sets them (cm2_spec, which says why; LORASTUDIO_CM2_UNROLL_RULE=0 turns it off): for a
// slice of at most kCm2UnrollShortSteps steps, a divisor of k_steps from 5 to 8 where there is one (no steps left
// to the loop's tail, which is not unrolled), else all of them; longer slices 8.
constexpr uint32_t kCm2UnrollShortSteps = 16;
uint32_t cm2_rule_unroll(uint32_t k_steps);
// The slices of a long reduction (K) over `tiles` output tiles, as many as fill the GPU's last wave of
// workgroups best, each at least 1024 long (ops/matmul.cpp cm2_split_k says why).
uint32_t split_by_waves(Cm2Tile tile, uint64_t tiles, uint32_t K, uint64_t sms);

// Whether the coopmat2 kernel's split products add up their own slices (ops/matmul.cpp cm2_fixup_mode), taking
// vk::Recorder::tile_counters.
bool cm2_fixup_enabled();

// Products with a side of at most this many outputs go to shaders/matmul_skinny.comp (its kMaxShort).
constexpr uint32_t kSkinnyMax = 16;
// Its ROWS_ALONG_K variant: a workgroup per kRows long indices, 1 to kSkinnyRowsMax, in one dimension of
// at most 65535 workgroups, summing subgroups of at least kSkinnyRowsMinSubgroup.
constexpr uint32_t kSkinnyRowsMax = 4;
constexpr uint32_t kSkinnyRowsMinSubgroup = 8;
constexpr uint32_t kSkinnyRowsMaxLong = 65535 * kSkinnyRowsMax;
// Products with K at most this go to shaders/matmul_short_k.comp (its K a specialization constant).
constexpr uint32_t kShortKMax = 64;

// Whether a skinny product whose long operand (L indices) is contiguous along k (`rows_along_k`) takes the
// rows variant on a device of this subgroup size.
inline bool skinny_rows_fit(uint32_t L, bool rows_along_k, uint32_t subgroup_size) {
  return rows_along_k && L <= kSkinnyRowsMaxLong && subgroup_size >= kSkinnyRowsMinSubgroup;
}
// The rows variant's kRows: 1 to kSkinnyRowsMax long indices a workgroup, keeping at least 256 workgroups.
inline uint32_t skinny_rows(uint32_t L) { return std::clamp(L / 256, 1u, kSkinnyRowsMax); }
// Otherwise the columns variant: how many slices of K (up to 512) a product of long side L is split into,
// enough for about 1024 workgroups, each slice at least 8 long, the partial sums within one binding and at most
// vk::Recorder::kSplitRingBytes, so that in the layer backward's ScheduleScope each such product (LoRA's dA and dB)
// takes a small buffer of its own instead of the shared split slot (vk::Recorder::split_scratch).
uint32_t skinny_splits(uint32_t L, uint32_t M, uint32_t N, uint32_t K, uint64_t max_binding);

// The gated MLP's activation backward in a product's epilogue (ops::matmul_backward_x_glu; the kernels' GLU):
// gate and up read, C written as d gate and dup as d up, all laid out as C; act 1 SiLU, 2 GELU-tanh.
struct GluOperands {
  Tensor gate, up, dup;
  uint32_t act = 1;
};

// Operand layouts: element (i, k) of A sits at i*a_sm + k*a_sk, (j, k) of B at j*b_sn + k*b_sk,
// (i, j) of C at i*c_sm + j.
struct Gemm {
  const char* op;
  Tensor a, b, c, bias, lora_t, lora_l;
  uint32_t M = 0, N = 0, K = 0, batch = 1;
  uint32_t a_sm = 0, a_sk = 0, b_sn = 0, b_sk = 0, c_sm = 0;
  uint32_t a_sz = 0, b_sz = 0, c_sz = 0;
  float alpha = 1, beta = 0;
  bool accumulate = false;
  uint32_t rank = 0;
  float lora_scale = 0;
  bool lora_l_by_rank = false;  // lora_l is stored [rank, N] (LoRA's A in dx += dt·A), not [N, rank]
  // Two-level batch (gemm_bases in shaders/common/gemm_interface.glsl); z_div 0: a plain batch.
  uint32_t z_div = 0, a_sz2 = 0, b_sz2 = 0, c_sz2 = 0, b_group = 1;
  bool round_f32_b = false;  // tensor cores may round an f32 B (an activation) to f16
  // B is this quantized weight, read in packed form by shaders/matmul_coopmat2.comp (b is its codes): only
  // where ops::quant_in_gemm allows, batch 1, every operand within one binding.
  const QuantWeight* qb = nullptr;
  // Where set, a product that splits K whole (one dispatch, f32 C, no epilogue) leaves its partial sums here
  // instead of reducing them into C (ops::matmul_forward_unreduced).
  SplitSums* unreduced = nullptr;
  // Where set, the epilogue applies the gated MLP's activation backward: batch 1, no accumulation, C f32 or f16, on
  // the shader cores' kernel or (C f16) the cooperative-matrix-2 kernel only (ops::matmul_backward_x_glu checks).
  const GluOperands* glu = nullptr;
  // Where set, a split product's reduce rotates the output (ops::RopeInReduce) and sets rope->applied.
  RopeInReduce* rope = nullptr;
};

// One dispatch of a product: g's operands, or the chunks of them that gemm() binds where the product is
// larger than one binding, with their sizes, flags (kBias ...) and push constants.
struct GemmDispatch {
  vk::Recorder& rec;
  const Gemm& g;
  const Tensor &a, &b, &c, &bias, &lt, &ll;
  uint32_t M, N, K, flags;
  GemmParams params;

  // The product's six bindings with `first` as A and these push constants (unused bindings still need a
  // buffer: A's; the flags keep the kernel off them), and a quantized B's scales after them.
  void run(vk::Kernel kernel, const Tensor& first, const GemmParams& p, vk::Groups groups, const vk::Spec& spec) const;
  // Split-K: scratch [splits, M, N] (f32) for the slices' partial sums; the parameters of slice z of K
  // (kc long) writing raw sums there; a slice pass (A as `first`) into it; the second pass, which adds the
  // slices in order and applies the product's epilogue (shaders/matmul_splitk_reduce.comp). `deferrable` (the
  // weight products, not the adapter's own): in a vk::Recorder::DeferScope the reduce waits for the scope's end,
  // its partial sums in scratch of their own.
  Tensor partial(uint32_t splits, bool deferrable = false) const;
  GemmParams slice_params(uint32_t splits, uint32_t kc) const;
  void run_slices(vk::Kernel kernel, const Tensor& first, const Tensor& partial, const GemmParams& p, vk::Groups groups,
                  const vk::Spec& spec) const;
  void reduce_slices(const Tensor& partial, uint32_t splits, bool deferrable = false) const;
  // Where the caller takes the partial sums unreduced (Gemm::unreduced) and this dispatch is the whole product with
  // nothing for the reduce's epilogue to do: hands them over and returns true (no reduce to record).
  bool leave_unreduced(const Tensor& partial, uint32_t splits) const;
};

// The paths of ops/matmul_skinny.cpp for LoRA's own f32 products: one short side and a long reduction
// (shaders/matmul_skinny.comp; its long operand may be an f16 activation), or a short reduction
// (shaders/matmul_short_k.comp). Each records the product and returns true where it takes it, else records
// nothing and returns false.
bool skinny_dispatch(const GemmDispatch& d);
bool short_k_dispatch(const GemmDispatch& d);

}  // namespace ls::ops::detail
