#include "ops/matmul.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>

#include "ops/common.h"
#include "ops/convert.h"
#include "ops/dropout.h"
#include "ops/matmul_detail.h"
#include "ops/quant.h"

namespace ls::ops {

namespace {

using namespace detail;

constexpr uint32_t kMatvecMaxRows = 4, kMatvecCols = 4;

// The tensor-core kernels (shaders/matmul_coopmat.comp, matmul.kernels.cmake): f16 or f32 activations
// × f16/bf16 weights, at the default tile (64×128 on 2×4 subgroups of 2×2 matrices) or the big one
// (128×128 on 2×2 subgroups of 4×4, storing straight to C); their GL_KHR_cooperative_matrix rows where the
// device runs those (vk::Device::coopmat_khr).
vk::Kernel coopmat_kernel(bool khr, DType a, DType b, DType c, bool big) {
  if (khr) return variant(big ? vk::family::gemm_coopmat_khr_big : vk::family::gemm_coopmat_khr, {a, b, c}, "matmul");
  return variant(big ? vk::family::gemm_coopmat_big : vk::family::gemm_coopmat, {a, b, c}, "matmul");
}

// A tensor-core kernel and its output tile.
struct CoopmatTile {
  vk::Kernel kernel;
  uint32_t bm, bn, threads;
};

// Output tiles at 128×128 from which the big tile is used: about one per SM of an H100 (132), so that
// the bigger tile does not leave the GPU half idle.
constexpr uint64_t kBigTileMinTiles = 128;

// The big tile stores its accumulators straight to C: every tile must lie inside C (M and N multiples of
// 128), C's rows 16-byte aligned, and the epilogue no more than alpha and accumulation. It pays only when
// both operands are already f16 (measured on the H100, session 6: bench/RESULTS.md).
bool big_tile_fits(DType a, DType b, uint32_t M, uint32_t N, uint32_t c_sm, uint32_t batch, uint32_t flags) {
  return a == DType::f16 && b == DType::f16 && M % 128 == 0 && N % 128 == 0 && c_sm % 8 == 0 && batch == 1 &&
         (flags & (kBias | kLora)) == 0 && uint64_t(M / 128) * (N / 128) >= kBigTileMinTiles;
}

CoopmatTile coopmat_tile(bool khr, DType a, DType b, DType c, bool big) {
  // Below the big tile, 64×128 for every product, attention's f32 × f32 ones included (session 5: it beat
  // 64×64 there too).
  return big ? CoopmatTile{coopmat_kernel(khr, a, b, c, true), 128, 128, 128}
             : CoopmatTile{coopmat_kernel(khr, a, b, c, false), 64, 128, 256};
}

using detail::Cm2Tile;
using detail::kCm2Tiles;
using detail::Cm2TileShape;
constexpr uint32_t kCm2K = 64;  // the kernels' BK
constexpr uint32_t kCm2ShaderUnroll = 8;  // shaders/matmul_coopmat2.comp's UNROLL when not specialized

// B f16, or (q) a quantized weight decoded as each tile loads (matmul.kernels.cmake's gemm_cm2q_<format>_*).
vk::Kernel cm2_kernel(Cm2Tile tile, bool b_along_n, DType c, QuantType q = QuantType::none) {
  namespace f = vk::family;
  static constexpr const vk::KernelFamily* families[3][2][8] = {
      {{&f::gemm_cm2_l, &f::gemm_cm2_t, &f::gemm_cm2_m, &f::gemm_cm2_s, &f::gemm_cm2_w, &f::gemm_cm2_h, &f::gemm_cm2_d,
        &f::gemm_cm2_g},
       {&f::gemm_cm2_ln, &f::gemm_cm2_tn, &f::gemm_cm2_mn, &f::gemm_cm2_sn, &f::gemm_cm2_wn, &f::gemm_cm2_hn,
        &f::gemm_cm2_dn, &f::gemm_cm2_gn}},
      {{&f::gemm_cm2q_nf4_l, &f::gemm_cm2q_nf4_t, &f::gemm_cm2q_nf4_m, &f::gemm_cm2q_nf4_s, &f::gemm_cm2q_nf4_w,
        &f::gemm_cm2q_nf4_h, &f::gemm_cm2q_nf4_d, &f::gemm_cm2q_nf4_g},
       {&f::gemm_cm2q_nf4_ln, &f::gemm_cm2q_nf4_tn, &f::gemm_cm2q_nf4_mn, &f::gemm_cm2q_nf4_sn, &f::gemm_cm2q_nf4_wn,
        &f::gemm_cm2q_nf4_hn, &f::gemm_cm2q_nf4_dn, &f::gemm_cm2q_nf4_gn}},
      {{&f::gemm_cm2q_q8_l, &f::gemm_cm2q_q8_t, &f::gemm_cm2q_q8_m, &f::gemm_cm2q_q8_s, &f::gemm_cm2q_q8_w,
        &f::gemm_cm2q_q8_h, &f::gemm_cm2q_q8_d, &f::gemm_cm2q_q8_g},
       {&f::gemm_cm2q_q8_ln, &f::gemm_cm2q_q8_tn, &f::gemm_cm2q_q8_mn, &f::gemm_cm2q_q8_sn, &f::gemm_cm2q_q8_wn,
        &f::gemm_cm2q_q8_hn, &f::gemm_cm2q_q8_dn, &f::gemm_cm2q_q8_gn}}};
  const uint32_t format = q == QuantType::nf4 ? 1 : q == QuantType::q8 ? 2 : 0;
  return variant(*families[format][b_along_n][uint32_t(tile)], {DType::f16, DType::f16, c}, "matmul");
}

// cm2_kernel's B-along-n, f16-out kernel with the gated MLP's activation backward in its epilogue (GLU 1 SiLU,
// 2 GELU-tanh: matmul.kernels.cmake's gemm_cm2g_<activation>_<tile>n).
vk::Kernel cm2_glu_kernel(Cm2Tile tile, uint32_t act) {
  namespace f = vk::family;
  static constexpr const vk::KernelFamily* families[2][8] = {
      {&f::gemm_cm2g_silu_ln, &f::gemm_cm2g_silu_tn, &f::gemm_cm2g_silu_mn, &f::gemm_cm2g_silu_sn,
       &f::gemm_cm2g_silu_wn, &f::gemm_cm2g_silu_hn, &f::gemm_cm2g_silu_dn, &f::gemm_cm2g_silu_gn},
      {&f::gemm_cm2g_gelu_ln, &f::gemm_cm2g_gelu_tn, &f::gemm_cm2g_gelu_mn, &f::gemm_cm2g_gelu_sn,
       &f::gemm_cm2g_gelu_wn, &f::gemm_cm2g_gelu_hn, &f::gemm_cm2g_gelu_dn, &f::gemm_cm2g_gelu_gn}};
  return variant(*families[act == 1 ? 0 : 1][uint32_t(tile)], {DType::f16, DType::f16, DType::f16}, "matmul");
}

// The tile for an M×N×K product. Reductions up to 4864 long (every product of the 0.5B shape, the 7B shape's
// q/k/v/o, gate/up and the down product's dx): 128×64 on 128 invocations at up to 512 rows, 128×128 above. On
// the H100 (session 15, s15b/s15c) the 0.5B B1 step took 18.59 ms with 128×64 against 19.61 with the tiles
// before (its products 4-44% faster each), prefill 6.57 against 6.87 ms, B8 77.32 with 128×128 against 80.60
// with 256×128, the 7B down product's dx 338 against 387 µs. Longer reductions: 256 rows of C above 512, else
// 128 (ggml-vulkan's 128×256 tile, read the other way round, and its 128×128; at 512 rows the 128×128 tile was
// 4-47% faster at three of ggml's four shapes and 8% slower at the fourth, session 9; the 7B products with
// K = 18944 lost 7-8% with 128×64), or 64×64 where a short reduction would leave over half of the GPU's SMs (an
// H100's 132) idle with the bigger tile.
// The lm_head's logits at 256 rows (a B1 chunk) stay on 128×64 too: on the H100 (session 30) 128×128 took 356 µs
// against 400 in micro (s30b; 256×128 429, 128×256 1,016), but 432 against 415 in the step's trace, and the step
// was no faster (14.87 against 14.75-14.79 ms, s30c).
// LORASTUDIO_CM2_TILE (l, t, m, s, w, h, d or g) forces one, for tuning (g, 192×64, is only taken so);
// LORASTUDIO_CM2_SHORT_K=0 takes the longer reductions' rule for every product (session 14's), for measurement.
// The rules below count workgroups against the GPU's SMs (multiprocessors): the driver's count where it gives one
// (VK_NV_shader_sm_builtins, which NVIDIA's drivers offer wherever they offer VK_NV_cooperative_matrix2), else an
// H100's, whose 132 the rules were measured on (the H200 has as many).
constexpr uint64_t kCm2DefaultSms = 132;
uint64_t cm2_sms(const vk::Device& dev) {
  return dev.report().sm_count ? dev.report().sm_count : kCm2DefaultSms;
}
constexpr uint32_t kCm2ShortK = 4864;
// A few rows (batched generation: a token of each of up to 32 sequences): the 16-row tile, K in slices of about
// kCm2FewRowsSlice (cm2_split_k), so that each workgroup's chain of dependent K steps stays short and the
// weight, read once, streams through many workgroups at once. The tiles for hundreds of rows left B16 decoding of
// the 7B shape at 25 ms a step on the H200, 3.6x the tokens of one sequence's 5.8 ms (session 23).
// LORASTUDIO_CM2_FEW_ROWS=0 keeps the earlier tiles, for measurement.
constexpr uint32_t kCm2FewRows = 32, kCm2FewRowsSlice = 512;
bool few_rows_rule() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_FEW_ROWS");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}
// The tile a letter of Cm2Tile's names stands for (the measurement switches below), if any.
std::optional<Cm2Tile> tile_named(char letter) {
  const size_t t = std::string_view("ltmswhdg").find(letter);
  return t == std::string_view::npos ? std::nullopt : std::optional<Cm2Tile>(Cm2Tile(t));
}
Cm2Tile cm2_tile_rule(uint32_t M, uint32_t N, uint32_t K, uint64_t sms) {
  static const std::optional<Cm2Tile> forced = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_TILE");
    return v && *v ? tile_named(*v) : std::nullopt;
  }();
  if (forced) return *forced;
  if (M <= kCm2FewRows && few_rows_rule()) return Cm2Tile::d;
  static const bool short_k_rule = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_SHORT_K");
    return !(v && std::string_view(v) == "0");
  }();
  if (short_k_rule && K <= kCm2ShortK) return M > 512 ? Cm2Tile::m : Cm2Tile::h;
  const Cm2Tile big = M > 512 ? Cm2Tile::t : Cm2Tile::m;
  const Cm2TileShape& s = kCm2Tiles[uint32_t(big)];
  const uint64_t tiles = uint64_t(ceil_div(M, s.bm)) * ceil_div(N, s.bn);
  return tiles < sms / 2 && K < 2048 ? Cm2Tile::s : big;
}

// A measurement switch's number, or 0 when it is not one in [lo, hi].
uint32_t env_number(std::string_view v, uint32_t lo, uint32_t hi) {
  const unsigned long n = std::strtoul(std::string(v).c_str(), nullptr, 10);
  return n >= lo && n <= hi ? uint32_t(n) : 0;
}

// Split-K for a product of `tiles` output tiles that fill under half of the GPU's SMs: slices of K (each a multiple of
// the kernel's BK, the last one possibly shorter, at most 16). Reductions up to kCm2ShortK: slices at least 256 long
// until about one wave of workgroups. Longer ones (the lm_head's dx, K = the vocabulary): slices at least kCm2MinSlice
// long, as many as fill the most of their last wave, tiles·s / (waves·slots), with slots = 132 SMs × 256 / the tile's
// invocations (the 128×128 tile on 128 where its workgroups reach 132: cm2_spec), the fewest among equals (132 is an
// H100's or H200's count: cm2_sms): with long slices a wave's workgroups all run about as long, so a part-filled last
// wave is time lost. On the H200 (session 29, s29a) the lm_head's dx at 2,048 rows (K = 151,936, 56 tiles of 256×128,
// one an SM) took 3,057 µs with the first rule's 3 slices (168 workgroups: 1.27 waves), 2,302 with 2, 2,305 with 4,
// 2,330 with 6, 2,012 with 7 (392: 2.97 waves), 2,327 with 8, 2,383 with 12, and the B8 step 59.46 ms with every split
// product in 7 slices against 61.6 with the first rule. The same reading fits 896,512,4864 on 56 tiles of 128×64 (two
// an SM: 39.1 µs with the rule's 3 slices, 33.1 with 4, 36.3 with 2, 38.1 with 6, s28a), but the 0.5B B1 step with 4
// slices there (and everywhere) stayed at 15.34 ms, so the short reductions keep the first rule until a step shows a
// gain. Above 512 rows they take the waves too (B8's k and v products, K = 896 on 32 tiles, then stay whole: no slice
// reaches kCm2MinSlice): on the H100 (session 30, s30a) the B8 step took 61.63 and 61.40 ms with waves for every
// product against 62.67, 62.45 and 62.48 without, while the B1 step (512 rows) lost 0.15 ms with them.
// With a few rows (kCm2FewRows): slices of about kCm2FewRowsSlice whatever the tile count.
// Returns the number of slices and sets kc, the slices' length.
// LORASTUDIO_CM2_SPLIT_BELOW (a tile count) moves the threshold, for tuning; LORASTUDIO_CM2_SPLITS (1-128) sets the
// slices of every product the rule splits, for measurement; LORASTUDIO_CM2_SPLIT_RULE=0 takes the first rule for the
// long reductions too (session 28's), =1 the waves for the short ones at any M too.
constexpr uint32_t kCm2MinSlice = 1024, kCm2WavesRows = 512;
uint32_t cm2_split_k(Cm2Tile tile, uint64_t tiles, uint32_t M, uint32_t N, uint32_t K, uint64_t max_binding,
                     uint64_t sms, uint32_t& kc) {
  static const uint64_t below_forced = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_SPLIT_BELOW");
    return v && *v ? std::max<uint64_t>(1, std::strtoull(v, nullptr, 10)) : 0;
  }();
  const uint64_t below = below_forced ? below_forced : sms / 2;
  static const uint32_t forced = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_SPLITS");
    return v ? env_number(v, 1, 128) : 0;
  }();
  static const int waves_from = [] {  // the shortest reduction split by waves
    const char* v = std::getenv("LORASTUDIO_CM2_SPLIT_RULE");
    const std::string_view s = v ? v : "";
    return s == "0" ? -1 : s == "1" ? 0 : int(kCm2ShortK) + 1;
  }();
  kc = K;
  uint64_t want;
  if (M <= kCm2FewRows && few_rows_rule()) {
    want = std::min<uint64_t>(16, ceil_div(K, kCm2FewRowsSlice));
  } else {
    if (tiles >= below || K < 512) return 1;
    const bool by_waves = waves_from >= 0 && (K >= uint32_t(waves_from) || (waves_from > 0 && M > kCm2WavesRows));
    want = forced     ? forced
           : by_waves ? detail::split_by_waves(tile, tiles, K, sms)
                      : std::min<uint64_t>({16, (2 * below + tiles - 1) / tiles, K / 256});
  }
  while (want > 1 && want * M * N * 4 > max_binding) --want;
  if (want <= 1) return 1;
  kc = ceil_div(ceil_div(K, uint32_t(want)), kCm2K) * kCm2K;
  return ceil_div(K, kc);
}

// A tile's pipeline: its workgroup size (specialization constant 0) and the K steps of its unrolled loop
// (constant 1, the shader's default 8 unless set). The 128×128 tile runs on 128 invocations instead of 256 where
// its workgroups (tiles × K slices) are at least the GPU's SMs (132 on an H100 or H200), one an SM: two such
// workgroups then share an SM. On the H200 (session 26, s26b/s26c: m:128 for every product) B8's products at 4096 rows
// went from 187/164 to 143/140 µs (1,216 and 224 tiles) and the B8 step from 67.6 to 63.0 ms (twice); but the
// 7B products with K = 18,944 on 112 tiles (M = 512, 3,584 outputs), alone on their SMs, from 300 to 390-437 µs.
// The unrolled trips' length (constant 1) follows a short slice's K steps (detail::cm2_rule_unroll): the loop's tail,
// the steps a trip of 8 leaves, is not unrolled, and a reduction of 896 (the 0.5B shape's q, k, v, gate, up, the lm
// head's logits and down's dx: 14 steps) ran 8 unrolled steps and 6 without. In two trips of 7 on the H200 (session
// 33, micro in one call, µs): 4096×896→4864 143.1 -> 137.5, 512×896→4864 33.7 -> 31.3, the lm head's logits at 2,048
// rows 2,443 -> 2,357 and at 256 rows 385.7 -> 350.2; the 0.5B B8 step 57.95 -> 56.54 ms. Long slices keep 8: the
// first rule, a divisor of 5-8 for any length, took the lm head's dx (split slices of ~1,187 steps) 2,019 -> 2,111.
// LORASTUDIO_CM2_UNROLL_RULE=0 turns it off, for measurement.
// For measurement: LORASTUDIO_CM2_UNROLL (1-16) for every tile but the few-rows one, LORASTUDIO_CM2_THREADS
// (64-512) for those too, or as TILE:N (e.g. m:128, or m:256 for the rule off) for one tile, whatever its
// workgroups. On the H200 (session 26, s26a) every unroll below 8 was slower at the 7B shape's products (4:
// 336-342 µs against 302-330; 2: 365-408; 1: 410-473), and so were 512 invocations on the 256×128 tile.
uint32_t cm2_fixup_mode();
vk::Spec cm2_spec(Cm2Tile tile, uint64_t workgroups, uint64_t sms, uint32_t k_slice, bool fixup = false) {
  static const uint32_t unroll = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_UNROLL");
    return v ? env_number(v, 1, 16) : 0;
  }();
  static const std::pair<int, uint32_t> threads = []() -> std::pair<int, uint32_t> {  // (tile or -1 for all, size)
    const char* v = std::getenv("LORASTUDIO_CM2_THREADS");
    if (!v || !*v) return {-1, 0};
    const std::string_view s = v;
    if (s.size() > 2 && s[1] == ':') {
      const std::optional<Cm2Tile> t = tile_named(s[0]);
      return t ? std::pair<int, uint32_t>{int(*t), env_number(s.substr(2), 64, 512)} : std::pair<int, uint32_t>{-1, 0};
    }
    return {-1, env_number(s, 64, 512)};
  }();
  const bool tuned = tile != Cm2Tile::d;
  const bool sized = threads.second && (threads.first < 0 ? tuned : threads.first == int(tile));
  vk::Spec spec{.local_x = sized ? threads.second : detail::cm2_rule_threads(tile, workgroups, sms)};
  static const bool unroll_rule = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_UNROLL_RULE");
    return !(v && std::string_view(v) == "0");
  }();
  const uint32_t u = unroll ? unroll : unroll_rule ? detail::cm2_rule_unroll(k_slice / kCm2K) : 0;
  if (fixup) spec.constants = {u && tuned ? u : kCm2ShaderUnroll, cm2_fixup_mode()};  // constant 2: slices add up
  else if (u && u != kCm2ShaderUnroll && tuned) spec.constants = {u};
  return spec;
}

// Split products whose slices add up their partial sums themselves (the tile's last slice to finish, FIXUP in
// shaders/matmul_coopmat2.comp), with no reduce dispatch after them: LORASTUDIO_CM2_FIXUP=1 (=2: the partial sums
// read without `coherent`), for measurement. Off by default: session 19 measured an earlier form slower than the
// reduce pass on the H100 (bench/RESULTS.md).
uint32_t cm2_fixup_mode() {
  static const uint32_t mode = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_FIXUP");
    const std::string_view s = v ? v : "";
    return s == "1" ? 1u : s == "2" ? 2u : 0u;
  }();
  return mode;
}
}  // namespace
bool detail::cm2_fixup_enabled() { return cm2_fixup_mode() != 0; }
namespace {

// The fixup dispatch: the product's own bindings and epilogue, its K slices (z) into `partial` [S, M, N], and the
// tiles' counters (vk::Recorder::tile_counters).
void run_fixup(const GemmDispatch& d, vk::Kernel kernel, const Tensor& a16, const Tensor& partial, uint32_t splits,
               uint32_t kc, vk::Groups groups, const vk::Spec& spec) {
  GemmParams p = d.params;
  p.K = kc, p.k_last = d.K - (splits - 1) * kc, p.z_div = splits, p.a_sz = kc * d.g.a_sk, p.b_sz = kc * d.g.b_sk;
  p.c_sz = 0, p.b_group = 1, p.a_sz2 = p.b_sz2 = p.c_sz2 = 0;
  const vk::Use counters{d.rec.tile_counters(groups.x * groups.y), vk::Access::read_write};
  const vk::Use c_use = d.flags & kAccumulate ? inout(d.c) : out(d.c);
  const Tensor& bias = d.bias.defined() ? d.bias : a16;
  const Tensor& lt = d.lt.defined() ? d.lt : a16;
  const Tensor& ll = d.ll.defined() ? d.ll : a16;
  const QuantWeight* q = d.g.qb;
  const Tensor& absmax = q ? q->absmax : a16;
  const Tensor& scales = q ? q->scales : a16;
  const Tensor& map = q ? q->map : a16;
  d.rec.dispatch(kernel,
                 {in(a16), in(d.b), c_use, in(bias), in(lt), in(ll), in(absmax), in(scales), in(map), inout(partial),
                  counters},
                 p, groups, spec);
}

// Measurement, off by default: where cm2_split_k would split a short reduction (K up to kCm2ShortK), the 64×64
// tile unsplit instead when its own tiles reach half the GPU's SMs (LORASTUDIO_CM2_SPLIT_OR_S=1). Alone in micro it
// takes the 0.5B shape's q/o products from 17.6 to 12.2 µs, but on the H200 (session 26, s26b) the 0.5B B1 step
// went 15.62-15.75 -> 16.13-16.15 ms with it and prefill 90.7k -> 82.8k tok/s; only B8 gained (67.6 -> 66.6 ms).
// (With long reductions too, the lm head's dx on 98 such tiles, B8 took 77.1 ms: s26a.)
bool small_tile_over_split() {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_CM2_SPLIT_OR_S");
    return v && std::string_view(v) == "1";
  }();
  return on;
}

// Whether the workgroup-scope kernel takes this product: A f16 or f32 (converted first) and contiguous along
// k, B f16 and contiguous along one index, C f16 or f32, and every row stride and batch offset a multiple of
// 8 elements (16-byte aligned f16 rows for the driver's loads).
bool cm2_fits(const vk::Device& dev, const Gemm& g, DType a, DType b, DType c) {
  auto f16_or_f32 = [](DType t) { return t == DType::f16 || t == DType::f32; };
  if (!dev.coopmat2() || !f16_or_f32(a) || (b != DType::f16 && !g.qb) || !f16_or_f32(c)) return false;
  if (g.a_sk != 1 || !(g.b_sk == 1 || g.b_sn == 1)) return false;
  for (uint32_t v : {g.a_sm, g.b_sn, g.b_sk, g.c_sm, g.a_sz, g.b_sz, g.c_sz, g.a_sz2, g.b_sz2, g.c_sz2})
    if (v % 8 != 0 && v != 1) return false;
  return g.c_sm % 8 == 0 && g.a_sm % 8 == 0;
}

vk::Kernel splitk_reduce_kernel(DType b, DType c, const GluOperands* glu = nullptr) {
  if (glu)
    return variant(glu->act == 1 ? vk::family::gemm_splitk_reduce_glu_silu : vk::family::gemm_splitk_reduce_glu_gelu,
                   {b, c}, "matmul");
  return variant(vk::family::gemm_splitk_reduce, {b, c}, "matmul");
}

// Elements [begin, begin + count) of t, as a flat tensor (for binding a chunk of an operand).
// Whether each tensor fits one binding (gemm() splits the products whose operands do not).
bool fits_one_binding(const vk::Device& device, std::initializer_list<Tensor> tensors) {
  for (const Tensor& t : tensors)
    if (t.bytes() > device.report().max_storage_range) return false;
  return true;
}

Tensor flat_range(const Tensor& t, uint64_t begin, uint64_t count) {
  return t.reshape({uint32_t(t.numel()), 1}).slice_rows(begin, begin + count);
}

uint64_t extent(uint32_t len1, uint32_t s1, uint32_t len2, uint32_t s2) {
  return uint64_t(len1 - 1) * s1 + uint64_t(len2 - 1) * s2 + 1;
}

// An f32 A as f16 in the recording's scratch, in the same layout (every element A's strides reach, batches
// included): the workgroup-scope kernel has one operand type, f16, as ggml-vulkan's has.
Tensor cm2_a_as_f16(vk::Recorder& rec, const Gemm& g, const Tensor& a, uint32_t M, uint32_t K) {
  const uint64_t z_div = g.z_div ? g.z_div : g.batch;
  const uint64_t outer = (g.batch - 1) / z_div, inner = std::min<uint64_t>(g.batch - 1, z_div - 1);
  const uint64_t span = outer * g.a_sz2 + inner * g.a_sz + extent(M, g.a_sm, K, 1);
  const Tensor src = flat_range(a, 0, span);
  // The last conversion, if it was of this very range and nothing has written the range since (q, k and v,
  // or gate and up, read one input), or the copy a kernel left (remember_f16_copy). The key is the layout:
  // the copy is the range, flat.
  const uint64_t key = span;
  if (std::shared_ptr<vk::Allocation> copy = rec.find_copy(src.range(), key))
    return Tensor::view(rec.device(), std::move(copy), src.shape(), DType::f16);
  std::shared_ptr<vk::Allocation> scratch = rec.scratch(span * 2, vk::Recorder::kScratchCm2A);
  const Tensor dst = Tensor::view(rec.device(), scratch, src.shape(), DType::f16);
  convert_forward(rec, dst, src);
  rec.remember_copy(src.range(), key, std::move(scratch));
  return dst;
}

// Smallest chunk step along one dimension that keeps every binding offset it moves aligned: each
// entry of `byte_strides` is (element stride × element size) of an operand along that dimension.
uint32_t granule(std::initializer_list<uint64_t> byte_strides, uint64_t alignment) {
  uint64_t g = 1;
  for (uint64_t s : byte_strides) {
    uint64_t need = alignment / std::gcd(alignment, s == 0 ? alignment : s);
    g = std::lcm(g, need);
  }
  return uint32_t(g);
}

// Half of len rounded up to a multiple of g, or 0 when len cannot shrink.
uint32_t halved(uint32_t len, uint32_t g) {
  if (len <= g) return 0;
  uint32_t h = (len + 1) / 2;
  return (h + g - 1) / g * g;
}

// The workgroup-scope tensor-core kernel (cm2_fits), K split when the tiles are too few to fill the GPU.
void cm2_dispatch(const GemmDispatch& d) {
  vk::Recorder& rec = d.rec;
  const Gemm& g = d.g;
  const uint32_t M = d.M, N = d.N, K = d.K;
  const QuantType q = g.qb ? g.qb->type : QuantType::none;
  const Tensor a16 = d.a.dtype() == DType::f16 ? d.a : cm2_a_as_f16(rec, g, d.a, M, K);
  const bool b_along_n = g.b_sk != 1;
  const uint64_t sms = cm2_sms(rec.device());
  Cm2Tile tile = detail::cm2_tile(M, N, K, sms);
  uint32_t tiles_n = ceil_div(N, kCm2Tiles[uint32_t(tile)].bn), tiles_m = ceil_div(M, kCm2Tiles[uint32_t(tile)].bm);
  uint32_t kc = K;
  uint32_t splits = g.batch == 1 && N % 8 == 0
                        ? cm2_split_k(tile, uint64_t(tiles_n) * tiles_m, M, N, K,
                                      rec.device().report().max_storage_range, sms, kc)
                        : 1;
  const Cm2TileShape& small = kCm2Tiles[uint32_t(Cm2Tile::s)];
  if (splits > 1 && tile != Cm2Tile::d && K <= kCm2ShortK && small_tile_over_split() &&
      uint64_t(ceil_div(N, small.bn)) * ceil_div(M, small.bm) >= sms / 2) {
    tile = Cm2Tile::s;
    tiles_n = ceil_div(N, small.bn);
    tiles_m = ceil_div(M, small.bm);
    splits = 1;
  }
  if (splits == 1) {
    d.run(g.glu ? cm2_glu_kernel(tile, g.glu->act) : cm2_kernel(tile, b_along_n, d.c.dtype(), q), a16, d.params,
          {tiles_n, tiles_m, g.batch}, cm2_spec(tile, uint64_t(tiles_n) * tiles_m * g.batch, sms, K));
    return;
  }
  const Tensor partial = d.partial(splits, true);
  const uint64_t tiles = uint64_t(tiles_n) * tiles_m;
  if (cm2_fixup_enabled() && !g.glu && tiles <= vk::Recorder::kCounterWords) {
    run_fixup(d, cm2_kernel(tile, b_along_n, d.c.dtype(), q), a16, partial, splits, kc, {tiles_n, tiles_m, splits},
              cm2_spec(tile, tiles * splits, sms, kc, true));
    return;
  }
  GemmParams sliced = d.slice_params(splits, kc);
  sliced.k_last = K - (splits - 1) * kc;
  d.run_slices(cm2_kernel(tile, b_along_n, DType::f32, q), a16, partial, sliced, {tiles_n, tiles_m, splits},
               cm2_spec(tile, uint64_t(tiles_n) * tiles_m * splits, sms, kc));
  if (!d.leave_unreduced(partial, splits)) d.reduce_slices(partial, splits, true);
}

void dispatch_one(vk::Recorder& rec, const Gemm& g, const Tensor& a, const Tensor& b, const Tensor& c,
                  const Tensor& bias, const Tensor& lt, const Tensor& ll, uint32_t M, uint32_t N, uint32_t K,
                  uint32_t flags, float beta) {
  const GemmDispatch d{
      .rec = rec, .g = g, .a = a, .b = b, .c = c, .bias = bias, .lt = lt, .ll = ll, .M = M, .N = N, .K = K,
      .flags = flags,
      .params = {.M = M, .N = N, .K = K, .a_sm = g.a_sm, .a_sk = g.a_sk, .b_sn = g.b_sn, .b_sk = g.b_sk,
                 .c_sm = g.c_sm, .a_sz = g.a_sz, .b_sz = g.b_sz, .c_sz = g.c_sz, .alpha = g.alpha, .beta = beta,
                 .flags = flags, .rank = g.rank, .lora_scale = g.lora_scale, .z_div = g.z_div ? g.z_div : g.batch,
                 .a_sz2 = g.a_sz2, .b_sz2 = g.b_sz2, .c_sz2 = g.c_sz2, .b_group = g.b_group,
                 .q_offset = g.qb ? g.qb->offset : 0.0f}};
  const GemmParams& params = d.params;
  if (g.glu && (M <= kSkinnyMax || N <= kSkinnyMax || K <= kShortKMax))
    fail(g.op, "internal: the gated activation's backward on a few-row, skinny or short product");
  if (g.qb) {  // a quantized weight: only the workgroup-scope kernel reads it packed
    if (!cm2_fits(rec.device(), g, a.dtype(), b.dtype(), c.dtype())) fail(g.op, "a quantized weight's product does not fit the packed kernel");
    return cm2_dispatch(d);
  }
  if (M <= kMatvecMaxRows && g.a_sk == 1 && g.b_sk == 1 && g.batch == 1 && K % 8 == 0 && g.a_sm % 8 == 0 &&
      g.b_sn % 8 == 0) {
    // kSplit subgroups per output column, 16-byte loads (shaders/matvec8.comp).
    const uint32_t sg = std::max(1u, rec.device().report().subgroup_size), subgroups = std::max(1u, 256u / sg);
    const uint32_t split = matvec8_split(N, K, sg, subgroups);
    uint32_t groups = ceil_div(N, subgroups / split);
    vk::Spec spec{.local_x = 256};
    spec.constants = {split, matvec_depth()};
    d.run(variant(vk::family::matvec8, {a.dtype(), b.dtype(), c.dtype()}, g.op), a, params,
          {std::min<uint32_t>(groups, 65535), ceil_div(groups, 65535), 1}, spec);
    return;
  }
  if (M <= kMatvecMaxRows && g.a_sk == 1 && g.b_sk == 1 && g.batch == 1) {
    // One output column per 64 threads: no 64x64 tile half empty when M is 1.
    uint32_t groups = ceil_div(N, kMatvecCols);
    d.run(variant(vk::family::matvec, {a.dtype(), b.dtype(), c.dtype()}, g.op), a, params,
          {std::min<uint32_t>(groups, 65535), ceil_div(groups, 65535), 1}, {.local_x = 256});
    return;
  }
  if (skinny_dispatch(d) || short_k_dispatch(d)) return;
  if (cm2_fits(rec.device(), g, a.dtype(), b.dtype(), c.dtype())) return cm2_dispatch(d);
  bool tensor_cores = rec.device().coopmat() && (a.dtype() == DType::f16 || a.dtype() == DType::f32) &&
                      (b.dtype() == DType::f16 || b.dtype() == DType::bf16 || (b.dtype() == DType::f32 && g.round_f32_b));
  const bool big = tensor_cores && big_tile_fits(a.dtype(), b.dtype(), M, N, g.c_sm, g.batch, flags);
  if (g.glu && tensor_cores) fail(g.op, "internal: the gated activation's backward on a kernel without it");
  const bool khr = rec.device().coopmat_khr();
  const CoopmatTile tc = tensor_cores ? coopmat_tile(khr, a.dtype(), b.dtype(), c.dtype(), big) : CoopmatTile{};
  const vk::KernelFamily& scalar = !g.glu             ? vk::family::gemm
                                   : g.glu->act == 1 ? vk::family::gemm_glu_silu
                                                     : vk::family::gemm_glu_gelu;
  vk::Kernel kernel = tensor_cores ? tc.kernel : variant(scalar, {a.dtype(), b.dtype(), c.dtype()}, g.op);
  // Tiles: 64x64 on the scalar path, the kernel's on tensor cores (shaders/matmul_coopmat.comp).
  const uint32_t bm = tensor_cores ? tc.bm : kTile, bn = tensor_cores ? tc.bn : kTile;
  const uint32_t threads = tensor_cores ? tc.threads : 256u;
  const uint32_t tiles_n = ceil_div(N, bn), tiles_m = ceil_div(M, bm);
  // The big tile is chosen only with enough tiles to fill the GPU: no split of K then.
  const uint32_t splits = g.batch == 1 && !(tensor_cores && tc.bm == 128)
                              ? split_k(uint64_t(tiles_n) * tiles_m, M, N, K, rec.device().report().max_storage_range)
                              : 1;
  if (splits == 1) {
    d.run(kernel, a, params, {tiles_n, tiles_m, g.batch}, {.local_x = threads});
    return;
  }
  // Split-K: too few tiles to fill the GPU and a long reduction. Slice s of K writes its partial sums to
  // scratch [s, M, N] (f32, no epilogue); a second pass adds the slices in order and applies the epilogue.
  const uint32_t kc = K / splits;
  const Tensor partial = d.partial(splits, true);
  const CoopmatTile tc32 = tensor_cores ? coopmat_tile(khr, a.dtype(), b.dtype(), DType::f32, false) : CoopmatTile{};
  vk::Kernel partial_kernel = tensor_cores ? tc32.kernel : variant(vk::family::gemm, {a.dtype(), b.dtype(), DType::f32}, g.op);
  const uint32_t pbm = tensor_cores ? tc32.bm : kTile, pbn = tensor_cores ? tc32.bn : kTile;
  d.run_slices(partial_kernel, a, partial, d.slice_params(splits, kc), {ceil_div(N, pbn), ceil_div(M, pbm), splits},
               {.local_x = tensor_cores ? tc32.threads : 256u});
  if (!d.leave_unreduced(partial, splits)) d.reduce_slices(partial, splits, true);
}

void gemm(vk::Recorder& rec, const Gemm& g) {
  if (g.M == 0 || g.N == 0) return;
  uint32_t flags = (g.bias.defined() ? kBias : 0) | (g.accumulate ? kAccumulate : 0) | (g.rank ? kLora : 0) |
                   (g.rank && g.lora_l_by_rank ? kLoraByRank : 0);
  const uint64_t limit = rec.device().report().max_storage_range;
  auto fits = [&](const Tensor& t) { return !t.defined() || t.bytes() <= limit; };
  if (g.K == 0) fail(g.op, "K is 0");
  if (fits(g.a) && fits(g.b) && fits(g.c) && fits(g.bias) && fits(g.lora_t) && fits(g.lora_l)) {
    dispatch_one(rec, g, g.a, g.b, g.c, g.bias, g.lora_t, g.lora_l, g.M, g.N, g.K, flags, g.beta);
    return;
  }
  // Split into chunks of M, N and K whose bindings each fit (chunk starts are multiples of 64
  // elements, so every binding offset is aligned).
  if (g.batch != 1) fail(g.op, "a batched product with operands past maxStorageBufferRange is not supported");
  if (g.qb) fail(g.op, "a quantized weight's product with operands past maxStorageBufferRange");
  if (g.rank && g.lora_l_by_rank) fail(g.op, "a LoRA term stored by rank in a product past maxStorageBufferRange");
  const uint64_t ea = dtype_size(g.a.dtype()), eb = dtype_size(g.b.dtype()), ec = dtype_size(g.c.dtype());
  const uint64_t align = std::max<uint64_t>(rec.device().report().storage_alignment, 4);
  const uint64_t lora_row = uint64_t(g.rank) * 4;  // bytes per row of the LoRA t and B operands
  const uint32_t gm = granule({g.a_sm * ea, g.c_sm * ec, lora_row}, align);
  const uint32_t gn = granule({g.b_sn * eb, ec, eb, lora_row}, align);  // eb: the bias moves with n
  const uint32_t gk = granule({g.a_sk * ea, g.b_sk * eb}, align);
  uint32_t mc = g.M, nc = g.N, kc = g.K;
  // Shrink the dimension that dominates an oversized binding (the other one if it cannot shrink).
  auto shrink = [&](uint32_t& first, uint32_t g1, uint32_t& second, uint32_t g2) {
    if (uint32_t h = halved(first, g1)) { first = h; return; }
    if (uint32_t h = halved(second, g2)) { second = h; return; }
    fail(g.op, "an operand does not fit one binding of " + std::to_string(limit) + " bytes even when split");
  };
  for (;;) {
    if (extent(mc, g.a_sm, kc, g.a_sk) * ea > limit) {
      if (uint64_t(mc) * g.a_sm >= uint64_t(kc) * g.a_sk) shrink(mc, gm, kc, gk); else shrink(kc, gk, mc, gm);
    } else if (extent(nc, g.b_sn, kc, g.b_sk) * eb > limit) {
      if (uint64_t(nc) * g.b_sn >= uint64_t(kc) * g.b_sk) shrink(nc, gn, kc, gk); else shrink(kc, gk, nc, gn);
    } else if (extent(mc, g.c_sm, nc, 1) * ec > limit) {
      if (uint64_t(mc) * g.c_sm >= nc) shrink(mc, gm, nc, gn); else shrink(nc, gn, mc, gm);
    } else {
      break;
    }
  }
  for (uint32_t k0 = 0; k0 < g.K; k0 += kc) {
    uint32_t kl = std::min(kc, g.K - k0);
    // Only the first K slice adds the bias and the LoRA term; later ones accumulate.
    uint32_t f = k0 == 0 ? flags : kAccumulate;
    float beta = k0 == 0 ? g.beta : 1.0f;
    for (uint32_t m0 = 0; m0 < g.M; m0 += mc) {
      uint32_t ml = std::min(mc, g.M - m0);
      for (uint32_t n0 = 0; n0 < g.N; n0 += nc) {
        uint32_t nl = std::min(nc, g.N - n0);
        Tensor a = flat_range(g.a, uint64_t(m0) * g.a_sm + uint64_t(k0) * g.a_sk, extent(ml, g.a_sm, kl, g.a_sk));
        Tensor b = flat_range(g.b, uint64_t(n0) * g.b_sn + uint64_t(k0) * g.b_sk, extent(nl, g.b_sn, kl, g.b_sk));
        Tensor c = flat_range(g.c, uint64_t(m0) * g.c_sm + n0, extent(ml, g.c_sm, nl, 1));
        Tensor bias = (f & kBias) ? flat_range(g.bias, n0, nl) : Tensor();
        Tensor lt = (f & kLora) ? flat_range(g.lora_t, uint64_t(m0) * g.rank, uint64_t(ml) * g.rank) : Tensor();
        Tensor ll = (f & kLora) ? flat_range(g.lora_l, uint64_t(n0) * g.rank, uint64_t(nl) * g.rank) : Tensor();
        dispatch_one(rec, g, a, b, c, bias, lt, ll, ml, nl, kl, f, beta);
      }
    }
  }
}

const std::initializer_list<DType> kActivation = {DType::f32, DType::f16};
const std::initializer_list<DType> kWeight = {DType::f32, DType::f16, DType::bf16};

// x [.., K] as (rows, K); checks the last dimension.
uint32_t rows_with_cols(const Tensor& t, uint32_t cols, const char* op, const char* name) {
  require_defined(t, op, name);
  if (t.cols() != cols)
    fail(op, std::string(name) + " is " + t.describe() + "; its last dimension must be " + std::to_string(cols));
  return uint32_t(t.rows());
}

}  // namespace

namespace detail {

Cm2Tile cm2_tile(uint32_t M, uint32_t N, uint32_t K, uint64_t sms) { return cm2_tile_rule(M, N, K, sms); }

uint32_t cm2_rule_unroll(uint32_t k_steps) {
  if (k_steps < 1 || k_steps > kCm2UnrollShortSteps) return kCm2ShaderUnroll;
  for (uint32_t u = kCm2ShaderUnroll; u >= 5; --u)
    if (k_steps % u == 0) return u;
  return k_steps;
}

uint32_t cm2_rule_threads(Cm2Tile tile, uint64_t workgroups, uint64_t sms) {
  return tile == Cm2Tile::m && workgroups >= sms ? 128 : kCm2Tiles[uint32_t(tile)].threads;
}
uint32_t split_by_waves(Cm2Tile tile, uint64_t tiles, uint32_t K, uint64_t sms) {
  const uint32_t most = std::clamp<uint32_t>(K / kCm2MinSlice, 1, 16);
  uint32_t best = 1;
  uint64_t best_num = 0, best_den = 1;  // the filled share as a fraction, compared exactly
  for (uint32_t s = 1; s <= most; ++s) {
    const uint64_t workgroups = tiles * s;
    const uint64_t slots = sms * (256 / cm2_rule_threads(tile, workgroups, sms));
    const uint64_t den = ceil_div(workgroups, slots) * slots;
    if (workgroups * best_den > best_num * den) best = s, best_num = workgroups, best_den = den;
  }
  return best;
}

uint32_t matvec_split(uint32_t N, uint32_t K, uint32_t subgroup_size, uint32_t subgroups, uint32_t min_groups) {
  const uint32_t steps = std::max(1u, K / (8 * subgroup_size));  // a lane's pieces along K
  // LORASTUDIO_MATVEC_SPLIT=n caps the split at n (measurement: 1 is session 19's one subgroup a column)
  static const uint32_t cap = env_clamped("LORASTUDIO_MATVEC_SPLIT", 1, 8, 8);
  // LORASTUDIO_MATVEC_GROUPS=n asks every such product for n workgroups (measurement)
  static const uint32_t forced = env_clamped("LORASTUDIO_MATVEC_GROUPS", 0, 1 << 16, 0);
  const uint32_t want = forced ? forced : min_groups;
  uint32_t split = 1;
  while (split < cap && split * 2 <= subgroups && split * 2 <= steps && ceil_div(N, subgroups / split) < want)
    split *= 2;
  return split;
}

uint32_t matvec8_split(uint32_t N, uint32_t K, uint32_t subgroup_size, uint32_t subgroups) {
  return matvec_split(N, K, subgroup_size, subgroups, 2 * kMatvecMinGroups);
}

uint32_t matvec_depth() {  // (read at each recording: a test records several depths in one process)
  return env_clamped("LORASTUDIO_MATVEC_DEPTH", 1, 4, 2);
}

uint32_t rows_constant(uint32_t M) {  // (read at each recording, as matvec_depth)
  return env_clamped("LORASTUDIO_ROWS_SPEC", 0, 1, 1) == 1 ? std::clamp(M, 1u, kMatvecMaxRows) : kMatvecMaxRows;
}

uint32_t nf4_piece_words(PiecesOf kernel, uint32_t K, std::initializer_list<const QuantWeight*> weights) {
  uint32_t words = std::bit_floor(kernel == PiecesOf::matvec8 ? env_clamped("LORASTUDIO_NF4_WORDS", 1, 4, 2)
                                                              : env_clamped("LORASTUDIO_NF4_NORM_WORDS", 1, 4, 1));
  auto fits = [&] {
    if (K % (8 * words) != 0) return false;
    for (const QuantWeight* w : weights)
      if (w && (w->type != QuantType::nf4 || w->codes.byte_offset() % (4 * words) != 0)) return false;
    return true;
  };
  while (words > 1 && !fits()) words /= 2;
  return words;
}

uint32_t split_k(uint64_t tiles, uint32_t M, uint32_t N, uint32_t K, uint64_t max_binding) {
  constexpr uint64_t kWantTiles = 256;
  uint32_t s = 1;
  while (s < 16 && tiles * s < kWantTiles && K % (32 * s) == 0 && K / (2 * s) >= 128 &&
         uint64_t(2 * s) * M * N * 4 <= max_binding)
    s *= 2;
  return s;
}

void GemmDispatch::run(vk::Kernel kernel, const Tensor& first, const GemmParams& p, vk::Groups groups,
                       const vk::Spec& spec) const {
  const Tensor& bound_bias = bias.defined() ? bias : a;
  const Tensor& bound_t = lt.defined() ? lt : a;
  const Tensor& bound_l = ll.defined() ? ll : a;
  const vk::Use c_use = flags & kAccumulate ? inout(c) : out(c);
  if (g.qb)
    rec.dispatch(kernel,
                 {in(first), in(b), c_use, in(bound_bias), in(bound_t), in(bound_l), in(g.qb->absmax), in(g.qb->scales),
                  in(g.qb->map)},
                 p, groups, spec);
  else if (g.glu)  // gate, up and d up at bindings 11-13 (common/gemm_interface.glsl), A's in the unused ones
    rec.dispatch(kernel,
                 {in(first), in(b), c_use, in(bound_bias), in(bound_t), in(bound_l), in(first), in(first), in(first),
                  in(first), in(first), in(g.glu->gate), in(g.glu->up), out(g.glu->dup)},
                 p, groups, spec);
  else
    rec.dispatch(kernel, {in(first), in(b), c_use, in(bound_bias), in(bound_t), in(bound_l)}, p, groups, spec);
}

Tensor GemmDispatch::partial(uint32_t splits, bool deferrable) const {
  return Tensor::view(rec.device(), rec.split_scratch(uint64_t(splits) * M * N * 4, deferrable), {splits * M, N},
                      DType::f32);
}

GemmParams GemmDispatch::slice_params(uint32_t splits, uint32_t kc) const {
  GemmParams first = params;
  first.K = kc, first.c_sm = N, first.alpha = 1, first.beta = 0, first.flags = 0;
  first.z_div = splits, first.a_sz = kc * g.a_sk, first.b_sz = kc * g.b_sk, first.c_sz = M * N, first.b_group = 1;
  first.a_sz2 = first.b_sz2 = first.c_sz2 = 0;
  return first;
}

void GemmDispatch::run_slices(vk::Kernel kernel, const Tensor& first, const Tensor& partial, const GemmParams& p,
                              vk::Groups groups, const vk::Spec& spec) const {
  if (g.qb)
    rec.dispatch(kernel,
                 {in(first), in(b), out(partial), in(a), in(a), in(a), in(g.qb->absmax), in(g.qb->scales), in(g.qb->map)},
                 p, groups, spec);
  else
    rec.dispatch(kernel, {in(first), in(b), out(partial), in(a), in(a), in(a)}, p, groups, spec);
}

// Lanes an output for the reduce (shaders/matmul_splitk_reduce.comp): enough workgroups for two on each SM of
// an H100 (264), no more lanes than slices. LORASTUDIO_REDUCE_LANES=1 keeps one (measurement).
static uint32_t reduce_lanes(uint64_t outputs, uint32_t splits) {
  static const bool one = [] {
    const char* v = std::getenv("LORASTUDIO_REDUCE_LANES");
    return v && std::string_view(v) == "1";
  }();
  uint32_t lanes = 1;
  if (one) return lanes;
  while (lanes < 32 && lanes * 2 <= splits && ceil_div(outputs * lanes, 256) < 264) lanes *= 2;
  return lanes;
}

bool GemmDispatch::leave_unreduced(const Tensor& partial, uint32_t splits) const {
  const bool whole = M == g.M && N == g.N && K == g.K && g.batch == 1 && g.c_sm == N;
  if (!g.unreduced || g.glu || !whole || flags != 0 || params.alpha != 1 || c.dtype() != DType::f32) return false;
  *g.unreduced = {.partial = partial, .splits = splits, .lanes = reduce_lanes(uint64_t(M) * N, splits)};
  return true;
}

void GemmDispatch::reduce_slices(const Tensor& partial, uint32_t splits, bool deferrable) const {
  GemmParams second = params;
  second.K = splits;
  // RoPE as the output is written (the whole product, not a chunk of one past a binding): an invocation a pair
  const bool rope = g.rope && !g.glu && M == g.M && N == g.N && K == g.K && g.batch == 1 && g.c_sm == N &&
                    !(flags & kAccumulate);
  const uint32_t lanes = reduce_lanes(uint64_t(M) * N, splits);  // (with rope: the order each invocation adds in)
  const uint32_t groups =
      uint32_t(std::min<uint64_t>(ceil_div(rope ? uint64_t(M) * N / 2 : uint64_t(M) * N * lanes, 256), 65535u));
  // Its B type is the bias's: a quantized weight's bias has the dequantized dtype, f16 on these devices.
  const DType bias_type = g.qb ? DType::f16 : b.dtype();
  const vk::Kernel kernel = rope ? variant(vk::family::gemm_splitk_reduce_rope, {bias_type, c.dtype()}, "matmul")
                                 : splitk_reduce_kernel(bias_type, c.dtype(), g.glu);
  vk::Spec spec{.local_x = 256u, .constants = {lanes}};
  if (rope) spec.constants.push_back(g.rope->head_dim);
  // The reduce reads the partial sums and the epilogue's operands: B and the unused bindings hold the partial sums,
  // so that it never waits on, nor holds back, a write to B or A (scratch, when dequantized or converted).
  const vk::Use c_use = flags & kAccumulate ? inout(c) : out(c);
  std::vector<vk::Use> bound = {in(partial), in(partial), c_use, in(bias.defined() ? bias : partial),
                                in(lt.defined() ? lt : partial), in(ll.defined() ? ll : partial)};
  if (g.glu)  // gate, up and d up at bindings 11-13
    bound.insert(bound.end(), {in(partial), in(partial), in(partial), in(partial), in(partial), in(g.glu->gate),
                               in(g.glu->up), out(g.glu->dup)});
  if (rope) {  // positions and inv_freq at bindings 6 and 7
    bound.insert(bound.end(), {in(g.rope->positions), in(g.rope->inv_freq)});
    g.rope->applied = true;
  }
  // In a vk::Recorder::DeferScope the reduce waits for the scope's end, after the next products' slices.
  if (deferrable && rec.deferring()) return rec.defer(kernel, bound, second, {groups, 1, 1}, spec);
  vk::Recorder::check_params(kernel, sizeof second, vk::params_scalars(second));
  rec.dispatch_raw(kernel, bound, &second, sizeof second, {groups, 1, 1}, spec);
}

}  // namespace detail

namespace {

// A weight operand as a product binds it: the tensor, a quantized weight's codes for the packed kernel
// (quant_in_gemm; then q is set), or the weight dequantized into the recording's scratch. `dtype` is the
// values' type (the bias must have it).
struct BoundWeight {
  Tensor b;
  const QuantWeight* q = nullptr;
  DType dtype;
};
BoundWeight bind_weight(vk::Recorder& rec, const WeightOperand& w, const char* op) {
  if (!w.q) {
    require_dtype(w.w, kWeight, op, "w");
    require(w.w.rank() == 2, op, "w is " + w.w.describe() + "; expected [N, K]");
    return {w.w, nullptr, w.w.dtype()};
  }
  const QuantWeight& q = *w.q;
  require(q.defined(), op, "the weight is not a quantized weight");
  if (quant_in_gemm(rec.device().coopmat2(), q.cols) && fits_one_binding(rec.device(), {q.codes}))
    return {q.codes, &q, dequantized_dtype(rec.device())};
  Tensor deq = dequantize_to_scratch(rec, q);
  return {deq, nullptr, deq.dtype()};
}

void require_bias(const Tensor& bias, uint32_t N, DType dtype, const char* op) {
  if (!bias.defined()) return;
  require_shape(bias, {N}, op, "bias");
  require(bias.dtype() == dtype, op, "bias is " + bias.describe() + "; it must have the weight's dtype " + dtype_name(dtype));
}

}  // namespace

namespace {
// matmul_forward's and matmul_backward_x's products, with their checks under the name `op`; `unreduced` as
// Gemm::unreduced.
// rope for a product's output y [M, N] (RopeInReduce), checked; null where it is switched off
// (LORASTUDIO_ROPE_IN_REDUCE=0, read while recording: tests switch it).
RopeInReduce* checked_rope(RopeInReduce* rope, const Tensor& y, uint32_t M, uint32_t N, bool accumulate,
                           const char* op) {
  if (!rope) return nullptr;
  rope->applied = false;
  const char* v = std::getenv("LORASTUDIO_ROPE_IN_REDUCE");
  if (v && std::string_view(v) == "0") return nullptr;
  require(!accumulate && rope->head_dim > 0 && rope->head_dim % 2 == 0 && N % rope->head_dim == 0, op,
          "RoPE on y " + y.describe() + " in heads of " + std::to_string(rope->head_dim) + " without accumulation");
  require_dtype(rope->positions, {DType::i32}, op, "positions");
  require_numel(rope->positions, M, op, "positions");
  require_dtype(rope->inv_freq, {DType::f32}, op, "inv_freq");
  require_numel(rope->inv_freq, rope->head_dim / 2, op, "inv_freq");
  return rope;
}

void forward_product(vk::Recorder& rec, const char* op, const Tensor& y, const Tensor& x, const WeightOperand& w,
                     const Tensor& bias, bool accumulate, SplitSums* unreduced, RopeInReduce* rope = nullptr) {
  require_dtype(x, kActivation, op, "x");
  require_dtype(y, kActivation, op, "y");
  const BoundWeight bw = bind_weight(rec, w, op);
  const uint32_t N = w.rows(), K = w.cols();
  const uint32_t M = rows_with_cols(x, K, op, "x");
  require(rows_with_cols(y, N, op, "y") == M, op, "y is " + y.describe() + " for x " + x.describe());
  require_bias(bias, N, bw.dtype, op);
  gemm(rec, {.op = op, .a = x, .b = bw.b, .c = y, .bias = bias, .M = M, .N = N, .K = K, .a_sm = K, .a_sk = 1,
             .b_sn = K, .b_sk = 1, .c_sm = N, .beta = 1, .accumulate = accumulate, .qb = bw.q, .unreduced = unreduced,
             .rope = checked_rope(rope, y, M, N, accumulate, op)});
}

void backward_x_product(vk::Recorder& rec, const char* op, const Tensor& dx, const Tensor& dy, const WeightOperand& w,
                        bool accumulate, SplitSums* unreduced) {
  require_dtype(dy, kActivation, op, "dy");
  require_dtype(dx, kActivation, op, "dx");
  const BoundWeight bw = bind_weight(rec, w, op);
  const uint32_t N = w.rows(), K = w.cols();
  const uint32_t M = rows_with_cols(dy, N, op, "dy");
  require(rows_with_cols(dx, K, op, "dx") == M, op, "dx is " + dx.describe() + " for dy " + dy.describe());
  // dx(m, k) = Σ_n dy(m, n)·w(n, k): B's "row" index is k (stride 1), its reduction index n (stride K).
  gemm(rec, {.op = op, .a = dy, .b = bw.b, .c = dx, .M = M, .N = K, .K = N, .a_sm = N, .a_sk = 1, .b_sn = 1,
             .b_sk = K, .c_sm = K, .beta = 1, .accumulate = accumulate, .qb = bw.q, .unreduced = unreduced});
}

bool split_into_norm() {
  const char* v = std::getenv("LORASTUDIO_SPLIT_INTO_NORM");  // (read while recording: tests switch it)
  return !(v && std::string_view(v) == "0");
}
}  // namespace

void matmul_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const WeightOperand& w, const Tensor& bias,
                    bool accumulate, RopeInReduce* rope) {
  forward_product(rec, "matmul_forward", y, x, w, bias, accumulate, nullptr, rope);
}

void matmul_backward_x(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w, bool accumulate) {
  backward_x_product(rec, "matmul_backward_x", dx, dy, w, accumulate, nullptr);
}

SplitSums matmul_forward_unreduced(vk::Recorder& rec, const Tensor& y, const Tensor& x, const WeightOperand& w) {
  SplitSums sums;
  forward_product(rec, "matmul_forward_unreduced", y, x, w, Tensor(), false, split_into_norm() ? &sums : nullptr);
  return sums;
}

SplitSums matmul_backward_x_unreduced(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w) {
  SplitSums sums;
  backward_x_product(rec, "matmul_backward_x_unreduced", dx, dy, w, false, split_into_norm() ? &sums : nullptr);
  return sums;
}

void matmul_backward_x_lora(vk::Recorder& rec, const Tensor& dx, const Tensor& dy, const WeightOperand& w,
                            const Tensor& dt, const Tensor& lora_a, bool accumulate) {
  const char* op = "matmul_backward_x_lora";
  require_dtype(dy, kActivation, op, "dy");
  require_dtype(dx, kActivation, op, "dx");
  require_dtype(dt, {DType::f32}, op, "dt");
  require_dtype(lora_a, {DType::f32}, op, "lora_a");
  const uint32_t N = w.rows(), K = w.cols();
  const uint32_t M = rows_with_cols(dy, N, op, "dy");
  require(rows_with_cols(dx, K, op, "dx") == M, op, "dx is " + dx.describe() + " for dy " + dy.describe());
  require(lora_a.rank() == 2 && lora_a.dim(1) == K, op, "lora_a is " + lora_a.describe() + " for w's " +
                                                            std::to_string(K) + " columns");
  const uint32_t r = lora_a.dim(0);
  require(rows_with_cols(dt, r, op, "dt") == M, op, "dt is " + dt.describe() + " for dy " + dy.describe());
  const bool cm2 = rec.device().coopmat2();
  if ((!rec.device().coopmat() || cm2) && fits_one_binding(rec.device(), {dx, dy, w.q ? w.q->codes : w.w})) {
    const BoundWeight bw = bind_weight(rec, w, op);
    const Gemm g{.op = op, .a = dy, .b = bw.b, .c = dx, .lora_t = dt, .lora_l = lora_a, .M = M, .N = K, .K = N,
                 .a_sm = N, .a_sk = 1, .b_sn = 1, .b_sk = K, .c_sm = K, .beta = 1, .accumulate = accumulate, .rank = r,
                 .lora_scale = 1, .lora_l_by_rank = true, .qb = bw.q};
    if (!cm2 || cm2_fits(rec.device(), g, dy.dtype(), bw.b.dtype(), dx.dtype())) return gemm(rec, g);
  }
  matmul_backward_x(rec, dx, dy, w, accumulate);
  matmul_backward_x(rec, dx, dt, lora_a, true);
}

namespace {
// LORASTUDIO_GLU_EPILOGUE (read while recording: tests switch it): 0 off; 1 on every kernel that takes it; unset, on
// the shader cores' kernel only: on the cooperative-matrix-2 kernel its per-element epilogue (reading gate and up,
// writing d up) took 0.5B B1's down dx product from 46.7 to 88 us on the H200, more than the pass it saves (session
// 38, s38a).
char glu_epilogue_mode() {
  const char* v = std::getenv("LORASTUDIO_GLU_EPILOGUE");
  return v && (std::string_view(v) == "0" || std::string_view(v) == "1") ? v[0] : 'd';
}
bool overlap(const Tensor& a, const Tensor& b) {
  const vk::BufferRange x = a.range(), y = b.range();
  return x.alloc == y.alloc && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}
}  // namespace

bool matmul_backward_x_glu(vk::Recorder& rec, const Tensor& dgate, const Tensor& dup, const Tensor& dy,
                           const WeightOperand& w, const Tensor& gate, const Tensor& up, GluActivation act) {
  const char* op = "matmul_backward_x_glu";
  require_dtype(dy, kActivation, op, "dy");
  require_dtype(gate, kActivation, op, "gate");
  for (const Tensor* t : {&up, &dgate, &dup}) require_shape(*t, gate.shape(), op, "up, dgate and dup as gate");
  const uint32_t N = w.rows(), K = w.cols();
  const uint32_t M = rows_with_cols(dy, N, op, "dy");
  require(rows_with_cols(gate, K, op, "gate") == M, op, "gate is " + gate.describe() + " for dy " + dy.describe());
  for (const Tensor* t : {&dgate, &dup})
    for (const Tensor* in : {&gate, &up, &dy})
      require(!overlap(*t, *in), op, "an output shares memory with an input");
  require(!overlap(dgate, dup), op, "dgate and dup share memory");
  const vk::Device& dev = rec.device();
  // Where the product takes the shader cores' kernel or the cooperative-matrix-2 kernel (with an f16 C): not a
  // few-row, skinny or short-K product (their own kernels), nor a quantized weight, nor one past a binding.
  const bool one_dtype = up.dtype() == gate.dtype() && dgate.dtype() == gate.dtype() && dup.dtype() == gate.dtype();
  const char mode = glu_epilogue_mode();
  if (mode == '0' || !one_dtype || w.q || M <= std::max(kMatvecMaxRows, kSkinnyMax) || K <= kSkinnyMax ||
      N <= kShortKMax || !fits_one_binding(dev, {dy, w.w, gate, up, dgate, dup}))
    return false;
  const GluOperands glu{.gate = gate, .up = up, .dup = dup, .act = act == GluActivation::silu ? 1u : 2u};
  const Gemm g{.op = op, .a = dy, .b = w.w, .c = dgate, .M = M, .N = K, .K = N, .a_sm = N, .a_sk = 1, .b_sn = 1,
               .b_sk = K, .c_sm = K, .beta = 1, .glu = &glu};
  if (dev.coopmat2() ? mode != '1' || !(gate.dtype() == DType::f16 && cm2_fits(dev, g, dy.dtype(), w.w.dtype(), gate.dtype()))
                     : dev.coopmat())
    return false;
  gemm(rec, g);
  return true;
}

void matmul_backward_w(vk::Recorder& rec, const Tensor& dw, const Tensor& dy, const Tensor& x, float scale) {
  const char* op = "matmul_backward_w";
  require_dtype(dy, kActivation, op, "dy");
  require_dtype(x, kActivation, op, "x");
  require_dtype(dw, {DType::f32}, op, "dw");
  require(dw.rank() == 2, op, "dw is " + dw.describe() + "; expected [N, K]");
  const uint32_t N = dw.dim(0), K = dw.dim(1);
  const uint32_t M = rows_with_cols(dy, N, op, "dy");
  require(rows_with_cols(x, K, op, "x") == M, op, "x is " + x.describe() + " for dy " + dy.describe());
  // dw(n, k) += scale·Σ_m dy(m, n)·x(m, k): both operands read transposed.
  gemm(rec, {.op = op, .a = dy, .b = x, .c = dw, .M = N, .N = K, .K = M, .a_sm = 1, .a_sk = N, .b_sn = 1,
             .b_sk = K, .c_sm = K, .alpha = scale, .beta = 1, .accumulate = true});
}

void matmul_strided(vk::Recorder& rec, const Tensor& c, const Tensor& a, const Tensor& b, const StridedProduct& s) {
  const char* op = "matmul_strided";
  require_dtype(a, kActivation, op, "a");
  require_dtype(b, kWeight, op, "b");
  require_dtype(c, kActivation, op, "c");
  require(s.batch >= 1 && s.batch <= 65535 && s.z_div >= 1 && s.b_group >= 1, op, "bad batch layout");
  if (s.M == 0 || s.N == 0 || s.K == 0) fail(op, "an empty product");
  // The last element each operand is read or written at must lie inside its tensor.
  const uint64_t outer = (s.batch - 1) / s.z_div, inner = std::min<uint64_t>(s.batch - 1, s.z_div - 1);
  auto last = [&](uint64_t sz2, uint64_t sz, uint64_t inner_index, uint64_t rows, uint64_t s_row, uint64_t cols,
                  uint64_t s_col) { return outer * sz2 + inner_index * sz + (rows - 1) * s_row + (cols - 1) * s_col; };
  require(last(s.a_sz2, s.a_sz, inner, s.M, s.a_sm, s.K, s.a_sk) < a.numel(), op, "A's strides run past " + a.describe());
  require(last(s.b_sz2, s.b_sz, inner / s.b_group, s.N, s.b_sn, s.K, s.b_sk) < b.numel(), op,
          "B's strides run past " + b.describe());
  require(last(s.c_sz2, s.c_sz, inner, s.M, s.c_sm, s.N, 1) < c.numel(), op, "C's strides run past " + c.describe());
  gemm(rec, {.op = op, .a = a, .b = b, .c = c, .M = s.M, .N = s.N, .K = s.K, .batch = s.batch, .a_sm = s.a_sm,
             .a_sk = s.a_sk, .b_sn = s.b_sn, .b_sk = s.b_sk, .c_sm = s.c_sm, .a_sz = s.a_sz, .b_sz = s.b_sz,
             .c_sz = s.c_sz, .alpha = s.alpha, .beta = s.beta, .accumulate = s.accumulate, .z_div = s.z_div,
             .a_sz2 = s.a_sz2, .b_sz2 = s.b_sz2, .c_sz2 = s.c_sz2, .b_group = s.b_group, .round_f32_b = true});
}

namespace {

// The [M, K] scratch buffer, in x's dtype, that holds x̃ (or, given dx, dropoutᵀ's input).
Tensor dropout_scratch(vk::Recorder& rec, const Tensor& x, uint32_t M, uint32_t K) {
  const uint64_t bytes = uint64_t(M) * K * dtype_size(x.dtype());
  return Tensor::view(rec.device(), rec.scratch(bytes, vk::Recorder::kScratchDropout), {M, K}, x.dtype());
}

}  // namespace

void lora_forward(vk::Recorder& rec, const Tensor& y, const Tensor& t, const Tensor& x, const WeightOperand& w,
                  const Tensor& bias, const Tensor& lora_a, const Tensor& lora_b, float scale,
                  const LoraDropout& dropout, bool accumulate, RopeInReduce* rope) {
  const char* op = "lora_forward";
  require_dtype(lora_a, {DType::f32}, op, "lora_a");
  require_dtype(lora_b, {DType::f32}, op, "lora_b");
  require_dtype(t, {DType::f32}, op, "t");
  require(lora_a.rank() == 2 && lora_b.rank() == 2, op, "lora_a and lora_b must be matrices");
  const BoundWeight bw = bind_weight(rec, w, op);
  const uint32_t N = w.rows(), K = w.cols(), r = lora_a.dim(0);
  require_shape(lora_a, {r, K}, op, "lora_a");
  require_shape(lora_b, {N, r}, op, "lora_b");
  const uint32_t M = rows_with_cols(x, K, op, "x");
  require_shape(t, {M, r}, op, "t");
  {
    vk::Recorder::Label label(rec, "lora");  // profiles group the adapter's own products
    if (dropout.active()) {
      const Tensor dropped = dropout_scratch(rec, x, M, K);
      dropout_forward(rec, dropped, x.reshape({M, K}), dropout.p, dropout.seed, dropout.stream);
      matmul_forward(rec, t, dropped, lora_a, Tensor());
    } else {
      matmul_forward(rec, t, x, lora_a, Tensor());
    }
  }
  require_dtype(y, kActivation, op, "y");
  require(rows_with_cols(y, N, op, "y") == M, op, "y is " + y.describe() + " for x " + x.describe());
  require_bias(bias, N, bw.dtype, op);
  gemm(rec, {.op = op, .a = x, .b = bw.b, .c = y, .bias = bias, .lora_t = t, .lora_l = lora_b, .M = M, .N = N, .K = K,
             .a_sm = K, .a_sk = 1, .b_sn = K, .b_sk = 1, .c_sm = N, .beta = 1, .accumulate = accumulate, .rank = r,
             .lora_scale = scale, .qb = bw.q, .rope = checked_rope(rope, y, M, N, accumulate, op)});
}

bool cm2_products(const vk::Device& device) { return device.coopmat2(); }

void remember_f16_copy(vk::Recorder& rec, const Tensor& a, std::shared_ptr<vk::Allocation> copy) {
  // The key cm2_a_as_f16 looks a contiguous [rows, cols] A up by: its span, numel.
  rec.remember_copy(flat_range(a, 0, a.numel()).range(), a.numel(), std::move(copy));
}

void lora_backward(vk::Recorder& rec, const Tensor& dx, const Tensor& d_lora_a, const Tensor& d_lora_b,
                   const Tensor& dt, const Tensor& dy, const Tensor& x, const Tensor& t, const WeightOperand& w,
                   const Tensor& lora_a, const Tensor& lora_b, float scale, bool accumulate, float grad_unscale,
                   const LoraDropout& dropout) {
  const char* op = "lora_backward";
  require_dtype(lora_a, {DType::f32}, op, "lora_a");
  require_dtype(lora_b, {DType::f32}, op, "lora_b");
  require(lora_a.rank() == 2 && lora_b.rank() == 2, op, "lora_a and lora_b must be matrices");
  const uint32_t r = lora_a.dim(0), K = lora_a.dim(1), N = lora_b.dim(0);
  require_shape(lora_b, {N, r}, op, "lora_b");
  require_shape(d_lora_a, lora_a.shape(), op, "d_lora_a");
  require_shape(d_lora_b, lora_b.shape(), op, "d_lora_b");
  const uint32_t M = rows_with_cols(dy, N, op, "dy");
  require(rows_with_cols(x, K, op, "x") == M, op, "x is " + x.describe() + " for dy " + dy.describe());
  require_shape(t, {M, r}, op, "t");
  require_shape(dt, {M, r}, op, "dt");
  require_dtype(dt, {DType::f32}, op, "dt");
  require_dtype(dy, kActivation, op, "dy");
  // dx (+)= dy·W + dt·A in one product where the kernel takes the adapter's term in its epilogue, A read [r, K]
  // as stored: the shader cores' kernel, and the cooperative-matrix-2 kernel, which adds it as more K steps on
  // the tensor cores (session 18). Not NV_cooperative_matrix's tiles, which apply it element by element through
  // memory: on the H100 that cost more than the separate product it saves (7B: the q/v dx products 5.0 -> 8.8 ms
  // a step against 1.0 ms for the K = r products; call s11b).
  const bool cm2 = rec.device().coopmat2();
  bool fuse = dx.defined() && !dropout.active() && (!rec.device().coopmat() || cm2) &&
              fits_one_binding(rec.device(), {dx, dy, w.q ? w.q->codes : w.w});
  Gemm gdx{};
  if (fuse) {
    const BoundWeight bw = bind_weight(rec, w, op);
    require(w.rows() == N && w.cols() == K, op, "w is [" + std::to_string(w.rows()) + ", " + std::to_string(w.cols()) + "]");
    require(rows_with_cols(dx, K, op, "dx") == M, op, "dx is " + dx.describe() + " for dy " + dy.describe());
    gdx = {.op = op, .a = dy, .b = bw.b, .c = dx, .lora_t = dt, .lora_l = lora_a, .M = M, .N = K, .K = N, .a_sm = N,
           .a_sk = 1, .b_sn = 1, .b_sk = K, .c_sm = K, .beta = 1, .accumulate = accumulate, .rank = r,
           .lora_scale = 1, .lora_l_by_rank = true, .qb = bw.q};
    if (cm2 && !cm2_fits(rec.device(), gdx, dy.dtype(), bw.b.dtype(), dx.dtype())) fuse = false;
    // The product's f16 dy now, beside dt and dB's products, which do not wait for it: the product then
    // waits only for dt (the conversion is remembered; cm2_a_as_f16 finds it).
    else if (cm2 && dy.dtype() == DType::f32) cm2_a_as_f16(rec, gdx, dy, M, N);
  }
  {
    // dt first: dA's product and dx's adapter term wait for it, dB's does not (one stage for both).
    vk::Recorder::Label label(rec, "lora");
    // dt(m, j) = s·Σ_n dy(m, n)·B(n, j)
    gemm(rec, {.op = op, .a = dy, .b = lora_b, .c = dt, .M = M, .N = r, .K = N, .a_sm = N, .a_sk = 1, .b_sn = 1,
               .b_sk = r, .c_sm = r, .alpha = scale});
    matmul_backward_w(rec, d_lora_b, dy, t, grad_unscale * scale);  // dB += u·s·dyᵀ·t
  }
  if (fuse) gemm(rec, gdx);  // beside dA's product: both wait only for dt
  {
    vk::Recorder::Label label(rec, "lora");
    if (dropout.active()) {  // x̃ again, from the same seed and stream
      const Tensor dropped = dropout_scratch(rec, x, M, K);
      dropout_forward(rec, dropped, x.reshape({M, K}), dropout.p, dropout.seed, dropout.stream);
      matmul_backward_w(rec, d_lora_a, dt, dropped, grad_unscale);  // dA += u·dtᵀ·x̃
    } else {
      matmul_backward_w(rec, d_lora_a, dt, x, grad_unscale);  // dA += u·dtᵀ·x
    }
  }
  if (!dx.defined() || fuse) return;
  matmul_backward_x(rec, dx, dy, w, accumulate);
  vk::Recorder::Label label(rec, "lora");
  if (dropout.active()) {  // dx += mask ⊙ (dt·A) / (1 − p)
    const Tensor through = dropout_scratch(rec, dx, M, K);  // in dx's dtype (x may be an f16 activation)
    matmul_backward_x(rec, through, dt, lora_a, false);
    dropout_backward(rec, dx.reshape({M, K}), through, dropout.p, dropout.seed, dropout.stream, true);
  } else {
    matmul_backward_x(rec, dx, dt, lora_a, true);
  }
}

}  // namespace ls::ops
