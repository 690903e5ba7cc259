#include "ops/matvec_norm.h"

#include <bit>
#include <cmath>
#include <vector>

#include "ops/activations.h"
#include "ops/common.h"
#include "ops/matmul_detail.h"

namespace ls::ops {

namespace {
struct MatvecNormParams {  // = `Params` in shaders/matvec_norm.comp
  uint32_t M, N, K, w_sn, y_sm;
  float eps;
  uint32_t flags, nw_type;
};
static_assert(sizeof(MatvecNormParams) <= 128);

constexpr uint32_t kMaxRows = 4;
constexpr uint32_t kStageBytes = 16384;  // the kernel's staging of x̂ (kStageWords uvec4s)
constexpr uint32_t kThreads = 256;
// Output columns a workgroup computes: one per subgroup, 4 with 64-wide subgroups at the least.
constexpr uint64_t kMaxColumns = 65535ull * 4;

// The workgroups and the specialisation (kThreads, kSplit) for N output columns (or pairs) along K.
struct ColumnGroups {
  vk::Groups groups;
  vk::Spec spec;
};
ColumnGroups column_groups(vk::Recorder& rec, uint32_t N, uint32_t K) {
  const uint32_t sg = std::max(1u, rec.device().report().subgroup_size), subgroups = std::max(1u, kThreads / sg);
  const uint32_t split = detail::matvec_split(N, K, sg, subgroups);
  ColumnGroups g{.groups = {ceil_div(N, subgroups / split), 1, 1}, .spec = {.local_x = kThreads}};
  g.spec.constants = {split, detail::matvec_depth()};
  return g;
}

void dispatch(vk::Recorder& rec, const vk::KernelFamily& family, const char* op, const Tensor& y, const Tensor& x,
              const Tensor& norm_w, float eps, const Tensor& w1, const Tensor& w2, const Tensor& bias) {
  require(norm_matvec_fits(y, x, norm_w, {w1, w2, bias}), op,
          "operands the fused kernel does not take: y " + y.describe() + ", x " + x.describe() + ", norm weight " +
              norm_w.describe() + ", weight " + w1.describe() + " (see ops::norm_matvec_fits)");
  require(std::isfinite(eps) && eps >= 0, op, "eps must be finite and >= 0");
  const uint32_t M = uint32_t(x.rows()), K = x.cols(), N = y.cols();
  ColumnGroups cg = column_groups(rec, N, K);
  cg.spec.constants.push_back(detail::rows_constant(M));
  rec.dispatch(variant(family, {y.dtype(), w1.dtype()}, op),
               {in(x), in(norm_w), in(w1), in(w2.defined() ? w2 : w1), in(bias.defined() ? bias : w1), out(y)},
               MatvecNormParams{.M = M, .N = N, .K = K, .w_sn = K, .y_sm = N, .eps = eps,
                                .flags = bias.defined() ? 1u : 0u, .nw_type = uint32_t(float_index(norm_w.dtype()))},
               cg.groups, cg.spec);
}

// What the plain and the packed kernels both need of x, y and the norm's weight: few rows, x̂ fitting the staging,
// K a multiple of 8, a columns count the workgroups cover.
bool staging_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w) {
  if (!y.defined() || !x.defined() || !norm_w.defined() || x.dtype() != DType::f32 || x.rank() < 1 || y.rank() < 1)
    return false;
  if (y.dtype() != DType::f32 && y.dtype() != DType::f16) return false;
  const uint64_t M = x.rows(), K = x.cols(), N = y.cols();
  const uint64_t stage_values = y.dtype() == DType::f16 ? kStageBytes / 2 : kStageBytes / 4;
  if (M == 0 || M > kMaxRows || y.rows() != M || K == 0 || K % 8 != 0 || M * K > stage_values || N == 0 ||
      N > kMaxColumns)
    return false;
  return float_index(norm_w.dtype()) <= 2 && norm_w.numel() == K;
}
}  // namespace

bool norm_matvec_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w, std::initializer_list<Tensor> weights) {
  if (!staging_fits(y, x, norm_w)) return false;
  const uint64_t K = x.cols(), N = y.cols();
  const Tensor* first = nullptr;
  for (const Tensor& w : weights)
    if (!first && w.defined()) first = &w;
  if (!first || float_index(first->dtype()) > 2) return false;
  const DType wt = first->dtype();
  for (const Tensor& w : weights) {
    if (!w.defined()) continue;
    if (w.dtype() != wt) return false;
    const bool is_bias = w.rank() == 1;
    if (is_bias ? w.numel() != N : (w.rank() != 2 || w.rows() != N || w.cols() != K)) return false;
  }
  return true;
}

void norm_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                         const Tensor& w, const Tensor& bias) {
  const char* op = "norm_matvec_forward";
  require_defined(w, op, "w");
  if (bias.defined()) require(bias.rank() == 1, op, "bias is " + bias.describe() + "; expected [N]");
  dispatch(rec, vk::family::matvec_norm, op, y, x, norm_w, eps, w, Tensor(), bias);
}

void norm_glu_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                             const Tensor& w_gate, const Tensor& w_up, GluActivation activation) {
  const char* op = "norm_glu_matvec_forward";
  require_defined(w_gate, op, "w_gate");
  require_defined(w_up, op, "w_up");
  const vk::KernelFamily& family =
      activation == GluActivation::silu ? vk::family::matvec_norm_silu : vk::family::matvec_norm_gelu;
  dispatch(rec, family, op, y, x, norm_w, eps, w_gate, w_up, Tensor());
}

namespace {
struct QuantMatvecNormParams {  // = `Params` in shaders/quant_matvec_norm.comp
  uint32_t M, N, K, w_sn, y_sm;
  float eps;
  uint32_t flags, nw_type;
  float offset1, offset2;
};
static_assert(sizeof(QuantMatvecNormParams) <= 128);

// shaders/quant_matvec_norm.comp's pieces a lane loads before it uses any (kDepth, 1-8): LORASTUDIO_QMATVEC_PIECES,
// else 2; and its workgroups: 8 an SM where the driver gives the SM count, each looping over column groups (its
// staging paid once a workgroup), else one a column group (0). LORASTUDIO_QMATVEC_WAVES sets the count an SM (0: one a
// group). Neither changes a bit. On the H100 (session 43, 7B nf4 decode, the gate/up product a layer): 8 an SM 64.1 us
// against 66.4-67.2 with one a group (2,368 workgroups), 2 an SM 70.4; pieces 1: 75.5, 4: 71.4, 2: 66.4-67.2.
uint32_t quant_norm_pieces() { return env_clamped("LORASTUDIO_QMATVEC_PIECES", 1, 8, 2); }
uint32_t quant_norm_groups_per_sm(const vk::Device& dev) {
  return env_clamped("LORASTUDIO_QMATVEC_WAVES", 0, 64, dev.report().sm_count > 0 ? 8 : 0);
}

const vk::KernelFamily& quant_family(QuantType t, bool glu, GluActivation activation) {
  const bool nf4 = t == QuantType::nf4;
  if (!glu) return nf4 ? vk::family::qmatvec_norm_nf4 : vk::family::qmatvec_norm_q8;
  if (activation == GluActivation::silu) return nf4 ? vk::family::qmatvec_norm_silu_nf4 : vk::family::qmatvec_norm_silu_q8;
  return nf4 ? vk::family::qmatvec_norm_gelu_nf4 : vk::family::qmatvec_norm_gelu_q8;
}

void quant_dispatch(vk::Recorder& rec, const char* op, const Tensor& y, const Tensor& x, const Tensor& norm_w,
                    float eps, const QuantWeight& w1, const QuantWeight* w2, const Tensor& bias,
                    GluActivation activation) {
  require(norm_matvec_fits(y, x, norm_w, {&w1, w2}, bias), op,
          "operands the fused kernel does not take: y " + y.describe() + ", x " + x.describe() + ", norm weight " +
              norm_w.describe() + ", a [" + std::to_string(w1.rows) + ", " + std::to_string(w1.cols) + "] " +
              quant_name(w1.type) + " weight (see ops::norm_matvec_fits)");
  require(std::isfinite(eps) && eps >= 0, op, "eps must be finite and >= 0");
  const uint32_t M = uint32_t(x.rows()), K = x.cols(), N = y.cols();
  // the kernel's pieces (2) a lane a step count as one for the column split
  ColumnGroups cg = column_groups(rec, N, std::max(8u, K / 2));
  cg.spec.constants[1] = quant_norm_pieces();
  cg.spec.constants.push_back(detail::rows_constant(M));
  cg.spec.constants.push_back(detail::nf4_piece_words(detail::PiecesOf::norm_matvec, K, {&w1, w2}));
  if (const uint32_t per_sm = quant_norm_groups_per_sm(rec.device()); per_sm != 0)  // workgroups that loop over groups
    cg.groups.x = std::min(cg.groups.x, per_sm * std::max(1u, rec.device().report().sm_count));
  const QuantWeight& up = w2 ? *w2 : w1;
  const DType bias_type = bias.defined() ? bias.dtype() : y.dtype();
  rec.dispatch(variant(quant_family(w1.type, w2 != nullptr, activation), {y.dtype(), bias_type}, op),
               {in(x), in(norm_w), in(w1.codes), in(up.codes), in(bias.defined() ? bias : w1.absmax), out(y),
                in(w1.absmax), in(w1.scales), in(up.absmax), in(up.scales), in(w1.map)},
               QuantMatvecNormParams{.M = M, .N = N, .K = K, .w_sn = K, .y_sm = N, .eps = eps,
                                     .flags = bias.defined() ? 1u : 0u,
                                     .nw_type = uint32_t(float_index(norm_w.dtype())), .offset1 = w1.offset,
                                     .offset2 = up.offset},
               cg.groups, cg.spec);
}
}  // namespace

bool norm_matvec_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w,
                      std::initializer_list<const QuantWeight*> weights, const Tensor& bias) {
  if (!staging_fits(y, x, norm_w)) return false;
  const QuantWeight* first = nullptr;
  for (const QuantWeight* w : weights)
    if (w && !first) first = w;
  if (!first || !first->defined() || !first->codes.defined() || !first->map.defined() || first->cols != x.cols() ||
      first->rows != y.cols())
    return false;
  for (const QuantWeight* w : weights)
    if (w && (w->type != first->type || w->rows != first->rows || w->cols != first->cols)) return false;
  return !bias.defined() || (bias.rank() == 1 && bias.numel() == first->rows &&
                             (bias.dtype() == DType::f32 || bias.dtype() == DType::f16));
}

void norm_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                         const QuantWeight& w, const Tensor& bias) {
  quant_dispatch(rec, "norm_matvec_forward", y, x, norm_w, eps, w, nullptr, bias, GluActivation::silu);
}

void norm_glu_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const Tensor& norm_w, float eps,
                             const QuantWeight& w_gate, const QuantWeight& w_up, GluActivation activation) {
  quant_dispatch(rec, "norm_glu_matvec_forward", y, x, norm_w, eps, w_gate, &w_up, Tensor(), activation);
}

namespace {
struct MatvecNormQkvParams {  // = `Params` in shaders/matvec_norm_qkv.comp
  uint32_t M, K, heads, kv_heads, half_d, cache_rows;
  int32_t slot;
  float eps;
  uint32_t flags, nw_type;
  float offset_q, offset_k, offset_v;
};
static_assert(sizeof(MatvecNormQkvParams) <= 128);

// The packed weights as the kernel reads them: one format, [H·D | KV·D | KV·D, K], biases all or none, f32 or f16
// and alike (q stands for y in the staging's check).
bool packed_qkv_fits(const Tensor& y, const Tensor& x, const Tensor& norm_w, uint32_t KV, uint32_t D,
                     const QkvRope& r) {
  const QuantWeight &wq = r.packed_q, &wk = r.packed_k, &wv = r.packed_v;
  if (!wk.defined() || !wv.defined() || r.wq.defined() || r.wk.defined() || r.wv.defined()) return false;
  if (!norm_matvec_fits(y, x, norm_w, {&wq}, r.bq)) return false;
  for (const QuantWeight* w : {&wk, &wv})
    if (w->type != wq.type || !w->codes.defined() || w->rows != uint64_t(KV) * D || w->cols != x.cols()) return false;
  for (const Tensor* b : {&r.bk, &r.bv})
    if (r.bq.defined() && (b->dtype() != r.bq.dtype() || b->numel() != uint64_t(KV) * D)) return false;
  return true;
}

// Pieces a lane of the packed pass loads before it sums any (its kDepth, 1-8): LORASTUDIO_QKV_DEPTH, else 4.
uint32_t packed_qkv_depth() { return env_clamped("LORASTUDIO_QKV_DEPTH", 1, 8, 4); }
}  // namespace

bool norm_qkv_rope_fits(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& x,
                        const Tensor& norm_w, const QkvRope& r) {
  if (!q.defined() || !k_cache.defined() || !v_cache.defined() || !x.defined() || q.rank() < 2 || k_cache.rank() < 2)
    return false;
  if (!r.packed() && (!r.wq.defined() || !r.wk.defined() || !r.wv.defined())) return false;
  const bool biases = r.bq.defined();
  if (r.bk.defined() != biases || r.bv.defined() != biases) return false;
  const uint32_t H = q.dim(-2), D = q.dim(-1), KV = k_cache.dim(-2);
  if (D % 2 != 0 || k_cache.dim(-1) != D || v_cache.shape() != k_cache.shape() || k_cache.dtype() != q.dtype() ||
      v_cache.dtype() != q.dtype() || x.rank() < 1)
    return false;
  const uint64_t M = x.rows();
  if (q.numel() != M * H * D) return false;
  // q's rows stand for y: the staging, the weights' dtype and shapes as the plain product checks them
  const Tensor y = q.reshape({uint32_t(M), H * D});
  if (r.packed()) {
    if (!packed_qkv_fits(y, x, norm_w, KV, D, r)) return false;
  } else {
    if (!norm_matvec_fits(y, x, norm_w, {r.wq, r.bq}) || r.wk.dtype() != r.wq.dtype() || r.wv.dtype() != r.wq.dtype())
      return false;
    for (const Tensor* w : {&r.wk, &r.wv})
      if (w->rank() != 2 || w->rows() != uint64_t(KV) * D || w->cols() != x.cols()) return false;
    for (const Tensor* b : {&r.bk, &r.bv})
      if (biases && (b->dtype() != r.wq.dtype() || b->numel() != uint64_t(KV) * D)) return false;
  }
  return r.positions.defined() && r.positions.dtype() == DType::i32 && r.positions.numel() == M &&
         r.inv_freq.defined() && r.inv_freq.dtype() == DType::f32 && r.inv_freq.numel() == D / 2 &&
         r.offsets.defined() && r.offsets.dtype() == DType::i32 && r.slot >= 0 && uint64_t(r.slot) < r.offsets.numel() &&
         uint64_t(H + 2 * KV) * (D / 2) <= kMaxColumns;
}

void norm_qkv_rope_forward(vk::Recorder& rec, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           const Tensor& x, const Tensor& norm_w, float eps, const QkvRope& r) {
  const char* op = "norm_qkv_rope_forward";
  require(norm_qkv_rope_fits(q, k_cache, v_cache, x, norm_w, r), op,
          "operands the fused kernel does not take: q " + q.describe() + ", k_cache " + k_cache.describe() + ", x " +
              x.describe() + ", Wq " +
              (r.packed() ? "[" + std::to_string(r.packed_q.rows) + ", " + std::to_string(r.packed_q.cols) + "] " +
                                quant_name(r.packed_q.type)
                          : r.wq.describe()) +
              " (see ops::norm_qkv_rope_fits)");
  require(std::isfinite(eps) && eps >= 0, op, "eps must be finite and >= 0");
  const uint32_t H = q.dim(-2), D = q.dim(-1), KV = k_cache.dim(-2);
  const uint64_t pairs = uint64_t(H + 2 * KV) * (D / 2);
  const bool biases = r.bq.defined();
  ColumnGroups cg = column_groups(rec, uint32_t(pairs), x.cols());
  // LORASTUDIO_QKV_SPLIT=n splits each pair's reduction over n subgroups, LORASTUDIO_QKV_DEPTH=n has a lane load n
  // pieces before it sums any (measurement; the packed pass's depth is 4 unless asked, the plain pass's
  // ops::detail::matvec_depth)
  const uint32_t subgroups = std::max(1u, kThreads / std::max(1u, rec.device().report().subgroup_size));
  if (const uint32_t split = env_clamped("LORASTUDIO_QKV_SPLIT", 0, 8, 0); split != 0) {
    cg.spec.constants[0] = std::min(std::bit_floor(split), subgroups);
    cg.groups.x = ceil_div(pairs, subgroups / cg.spec.constants[0]);
  }
  if (!r.packed()) cg.spec.constants[1] = env_clamped("LORASTUDIO_QKV_DEPTH", 1, 4, cg.spec.constants[1]);
  // Two pairs a subgroup (LORASTUDIO_QKV_PAIRS=2, measurement): half the workgroups; unsplit, D/2 even
  const uint32_t pairs_per_subgroup =
      cg.spec.constants[0] == 1 && (D / 2) % 2 == 0 ? env_clamped("LORASTUDIO_QKV_PAIRS", 1, 2, 1) : 1;
  cg.spec.constants.push_back(pairs_per_subgroup);
  if (pairs_per_subgroup > 1) cg.groups.x = ceil_div(pairs, uint64_t(subgroups) * pairs_per_subgroup);
  // Smaller workgroups (LORASTUDIO_QKV_THREADS=64 or 128, measurement; the same split, so the same bits): finer
  // units for the SMs. 7B's 288 workgroups of 256 fall 3 or 2 an SM on an H100's 132, and the SMs with 3 set the
  // pass's time (~20 us for 33 MB); 576 of 128 fall 5 or 4.
  if (const uint32_t threads = std::bit_floor(env_clamped("LORASTUDIO_QKV_THREADS", 32, kThreads, kThreads));
      threads < kThreads) {
    const uint32_t sg = std::max(1u, rec.device().report().subgroup_size), fewer = std::max(1u, threads / sg);
    if (fewer >= cg.spec.constants[0] && threads >= sg) {
      cg.spec.local_x = threads;
      cg.groups.x = ceil_div(ceil_div(pairs, uint64_t(pairs_per_subgroup)), fewer / cg.spec.constants[0]);
    }
  }
  const MatvecNormQkvParams params{.M = uint32_t(x.rows()), .K = x.cols(), .heads = H, .kv_heads = KV,
                                   .half_d = D / 2, .cache_rows = uint32_t(k_cache.numel() / (uint64_t(KV) * D)),
                                   .slot = r.slot, .eps = eps, .flags = biases ? 1u : 0u,
                                   .nw_type = uint32_t(float_index(norm_w.dtype())), .offset_q = r.packed_q.offset,
                                   .offset_k = r.packed_k.offset, .offset_v = r.packed_v.offset};
  if (r.packed()) {
    const QuantWeight &wq = r.packed_q, &wk = r.packed_k, &wv = r.packed_v;
    const bool nf4 = wq.type == QuantType::nf4;
    cg.spec.constants[1] = packed_qkv_depth();
    cg.spec.constants.push_back(detail::rows_constant(uint32_t(x.rows())));
    rec.dispatch(variant(nf4 ? vk::family::qmatvec_norm_qkv_nf4 : vk::family::qmatvec_norm_qkv_q8,
                         {q.dtype(), biases ? r.bq.dtype() : q.dtype()}, op),
                 {in(x), in(norm_w), in(wq.codes), in(wk.codes), in(wv.codes), in(biases ? r.bq : wq.codes),
                  in(biases ? r.bk : wq.codes), in(biases ? r.bv : wq.codes), in(r.positions), in(r.inv_freq), out(q),
                  out(k_cache), out(v_cache), in(r.offsets), in(wq.absmax), in(wk.absmax), in(wv.absmax),
                  in(wq.scales), in(wk.scales), in(wv.scales), in(wq.map)},
                 params, cg.groups, cg.spec);
    return;
  }
  cg.spec.constants.push_back(detail::rows_constant(uint32_t(x.rows())));
  rec.dispatch(variant(vk::family::matvec_norm_qkv, {q.dtype(), r.wq.dtype()}, op),
               {in(x), in(norm_w), in(r.wq), in(r.wk), in(r.wv), in(biases ? r.bq : r.wq), in(biases ? r.bk : r.wq),
                in(biases ? r.bv : r.wq), in(r.positions), in(r.inv_freq), out(q), out(k_cache), out(v_cache),
                in(r.offsets)},
               params, cg.groups, cg.spec);
}

namespace ref {
namespace {
float round_f16(double v) { return f16_to_f32(f32_to_f16(float(v))); }

// x̂ as the kernel stages it, [M, K].
std::vector<double> normed(std::span<const float> x, std::span<const float> norm_w, float eps, bool y_f16) {
  const size_t K = norm_w.size(), M = x.size() / K;
  std::vector<double> h(x.size());
  for (size_t m = 0; m < M; ++m) {
    double sum_sq = 0;
    for (size_t k = 0; k < K; ++k) sum_sq += double(x[m * K + k]) * x[m * K + k];
    const double r = 1.0 / std::sqrt(sum_sq / double(K) + eps);
    for (size_t k = 0; k < K; ++k) {
      const double v = double(x[m * K + k]) * r * norm_w[k];
      h[m * K + k] = y_f16 ? round_f16(v) : v;
    }
  }
  return h;
}

double dot_row(const std::vector<double>& h, size_t m, std::span<const float> w, size_t n, size_t K) {
  double s = 0;
  for (size_t k = 0; k < K; ++k) s += h[m * K + k] * w[n * K + k];
  return s;
}
}  // namespace

void norm_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                         std::span<const float> w, std::span<const float> bias, bool y_f16) {
  const size_t K = norm_w.size(), M = x.size() / K, N = w.size() / K;
  const std::vector<double> h = normed(x, norm_w, eps, y_f16);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      const double v = dot_row(h, m, w, n, K) + (bias.empty() ? 0.0 : double(bias[n]));
      y[m * N + n] = y_f16 ? round_f16(v) : float(v);
    }
}

void norm_glu_matvec_forward(std::span<float> y, std::span<const float> x, std::span<const float> norm_w, float eps,
                             std::span<const float> w_gate, std::span<const float> w_up, GluActivation activation,
                             bool y_f16) {
  const size_t K = norm_w.size(), M = x.size() / K, N = w_gate.size() / K;
  const std::vector<double> h = normed(x, norm_w, eps, y_f16);
  std::vector<double> g(M * N), u(M * N), out(M * N);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      const double gv = dot_row(h, m, w_gate, n, K), uv = dot_row(h, m, w_up, n, K);
      g[m * N + n] = y_f16 ? round_f16(gv) : gv;
      u[m * N + n] = y_f16 ? round_f16(uv) : uv;
    }
  if (activation == GluActivation::silu) ops::ref::silu_mul_forward(out, g, u);
  else ops::ref::gelu_tanh_mul_forward(out, g, u);
  for (size_t i = 0; i < out.size(); ++i) y[i] = y_f16 ? round_f16(out[i]) : float(out[i]);
}
}  // namespace ref

}  // namespace ls::ops
