#include "ops/decode_layer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "ops/common.h"
#include "ops/matmul_detail.h"

namespace ls::ops {

namespace {
struct DecodeLayerParams {  // = `Params` in shaders/decode_layer.comp
  uint32_t K, I, heads, kv_heads, half_d, cache_rows;
  int32_t slot;
  float eps;
  uint32_t flags, nw1_type, nw2_type;
  float scale;
  uint32_t splits, groups;
};
static_assert(sizeof(DecodeLayerParams) <= 128);

constexpr uint32_t kThreads = 256;
constexpr uint32_t kKeysAPart = 64;     // the kernel's kPart: keys an attention part scores
constexpr uint32_t kMaxHeadDim = 256;   // its MAX_D
constexpr uint64_t kStageBytes = 16384;  // its x̂ staging

// Workgroups a multiprocessor (LORASTUDIO_DECODE_PERSISTENT; 0, off, unless set). At most 2: every workgroup must be
// resident at once or the grid barrier waits forever, and two of 256 invocations fit an SM up to 128 registers an
// invocation (the default batches below take 120 on NVIDIA's driver, session 39; larger ones do not fit two).
uint32_t per_multiprocessor() { return env_clamped("LORASTUDIO_DECODE_PERSISTENT", 0, 2, 0); }

// An SM's registers on NVIDIA's GPUs (compute capability 5.0 and later), 32-bit each: two 256-invocation workgroups
// fit one only at up to 128 registers an invocation.
constexpr uint64_t kSmRegisters = 65536;

bool is_matrix(const Tensor& w, uint64_t rows, uint64_t cols, DType dtype) {
  return w.defined() && w.rank() == 2 && w.rows() == rows && w.cols() == cols && w.dtype() == dtype;
}
}  // namespace

namespace detail {
uint32_t resident_per_multiprocessor(uint32_t wanted, std::optional<uint32_t> registers) {
  if (wanted <= 1) return wanted;
  uint32_t fit = 1;
  while (fit < wanted && registers && uint64_t(*registers) * kThreads * (fit + 1) <= kSmRegisters) ++fit;
  return fit;
}
}  // namespace detail

uint32_t decode_layer_groups(const vk::Device& device) {
  const vk::DeviceReport& r = device.report();
  const uint32_t n = per_multiprocessor(), sg = r.subgroup_size;
  if (n == 0 || !r.memory_model_device_scope || sg < 8 || sg > kKeysAPart || kKeysAPart % sg != 0) return 0;
  // (a CPU device: one, which never waits at the grid barrier; lavapipe cuts a shader's loops short after 65535
  // iterations in all, which a wait for another workgroup would spend)
  if (r.type == "cpu") return 1;
  return n * std::max(1u, r.sm_count);
}

bool decode_layer_fits(const vk::Device& device, const DecodeLayer& l) {
  if (decode_layer_groups(device) == 0) return false;
  if (!l.x.defined() || l.x.dtype() != DType::f32 || l.x.rank() < 1 || l.x.rows() != 1) return false;
  if (l.qkv.packed() || !norm_qkv_rope_fits(l.q, l.k_cache, l.v_cache, l.x, l.input_norm, l.qkv)) return false;
  const DType act = l.q.dtype(), wt = l.qkv.wq.dtype();
  const uint64_t C = l.x.cols(), H = l.q.dim(-2), D = l.q.dim(-1), KV = l.k_cache.dim(-2);
  const uint64_t I = l.w_gate.defined() ? l.w_gate.rows() : 0;
  if (C * dtype_size(act) > kStageBytes || D % 8 != 0 || D > kMaxHeadDim || KV == 0 || H % KV != 0 || I == 0 ||
      I % 8 != 0 || (H * D) % 8 != 0)
    return false;
  if (!l.post_norm.defined() || float_index(l.post_norm.dtype()) > 2 || l.post_norm.numel() != C) return false;
  if (!is_matrix(l.wo, C, H * D, wt) || !is_matrix(l.w_gate, I, C, wt) || !is_matrix(l.w_up, I, C, wt) ||
      !is_matrix(l.w_down, C, I, wt))
    return false;
  if (!l.attn.defined() || l.attn.dtype() != act || l.attn.numel() != H * D) return false;
  if (!l.gated.defined() || l.gated.dtype() != act || l.gated.numel() != I) return false;
  const uint64_t S = l.k_cache.numel() / (KV * D), splits = (S + kKeysAPart - 1) / kKeysAPart;
  return S > 0 && H * splits * (D + 2) * 4 <= device.report().max_storage_range;
}

void decode_layer_forward(vk::Recorder& rec, const DecodeLayer& l) {
  const char* op = "decode_layer_forward";
  require(decode_layer_fits(rec.device(), l), op,
          "operands or a device the persistent layer does not take: x " + l.x.describe() + ", q " + l.q.describe() +
              ", k_cache " + l.k_cache.describe() + ", Wq " + l.qkv.wq.describe() + ", Wo " + l.wo.describe() +
              ", W_gate " + l.w_gate.describe() + ", W_down " + l.w_down.describe() + " (see ops::decode_layer_fits)");
  require(std::isfinite(l.eps) && l.eps >= 0, op, "eps must be finite and >= 0");
  const uint32_t C = l.x.cols(), H = l.q.dim(-2), D = l.q.dim(-1), KV = l.k_cache.dim(-2), I = uint32_t(l.w_gate.rows());
  const uint32_t S = uint32_t(l.k_cache.numel() / (uint64_t(KV) * D)), splits = ceil_div(S, kKeysAPart);
  // The column splits each stage's own dispatch would take (ops::norm_qkv_rope_forward, matmul_forward's matvec8,
  // norm_glu_matvec_forward), so that each column's sums run in the same order. Then, for measurement (the same bits
  // whatever they are): the matrix-vector stages' batches (the kernel's kCols and kDepth, 1 to 4, 2 and 2 unless set:
  // columns a subgroup takes at once, pieces of each of their rows a lane loads at once), loads in flight an
  // invocation in the attention stage (kBatch, 1 to 8, 2 unless set), and the stages that run (kStages: all 5, 31,
  // unless LORASTUDIO_DECODE_STAGES times a stage's share of the layer; the layer's output is then wrong).
  const uint32_t sg = rec.device().report().subgroup_size, subgroups = kThreads / sg;
  vk::Spec spec{.local_x = kThreads};
  spec.constants = {detail::matvec_split((H + 2 * KV) * (D / 2), C, sg, subgroups),
                    detail::matvec8_split(C, H * D, sg, subgroups), detail::matvec_split(I, C, sg, subgroups),
                    detail::matvec8_split(C, I, sg, subgroups), env_clamped("LORASTUDIO_DECODE_COLS", 1, 4, 2),
                    env_clamped("LORASTUDIO_DECODE_ATTN_BATCH", 1, 8, 2),
                    env_clamped("LORASTUDIO_DECODE_DEPTH", 1, 4, 2), env_clamped("LORASTUDIO_DECODE_STAGES", 0, 31, 31)};
  // A head's attention parts (o, max, sum), the parts done (the last combines, then sets it back to 0), and the grid
  // barrier's count and generation
  Tensor part = Tensor::empty(rec.device(), {H, splits, D + 2}, DType::f32, "decode layer attention parts");
  Tensor done = Tensor::empty(rec.device(), {H}, DType::i32, "decode layer parts done");
  upload(done, std::vector<int32_t>(H, 0));
  Tensor sync = Tensor::empty(rec.device(), {65}, DType::i32, "decode layer grid barrier");  // the kernel's Sync
  upload(sync, std::vector<int32_t>(65, 0));
  const vk::KernelFamily& family =
      l.activation == GluActivation::silu ? vk::family::decode_layer_silu : vk::family::decode_layer_gelu;
  const vk::Kernel kernel = variant(family, {l.q.dtype(), l.qkv.wq.dtype()}, op);
  // Two workgroups an SM only where the driver says both fit (the grid barrier would wait forever for one that is
  // not resident); the same bits with any number of workgroups.
  uint32_t groups = decode_layer_groups(rec.device());
  const uint32_t wanted = per_multiprocessor(), sms = rec.device().report().sm_count;
  if (wanted > 1 && rec.device().report().type != "cpu" && sms) {
    const std::optional<uint32_t> registers = rec.device().pipelines().registers(kernel, spec);
    const uint32_t fit = detail::resident_per_multiprocessor(wanted, registers);
    if (fit < wanted) {
      static std::once_flag said;
      std::call_once(said, [&] {
        const std::string why = registers ? "the layer takes " + std::to_string(*registers) +
                                                " registers an invocation, too many for " + std::to_string(wanted) +
                                                " workgroups of 256 on one"
                                          : std::string("the driver does not report the layer's registers");
        std::fprintf(stderr, "LORASTUDIO_DECODE_PERSISTENT=%u: %s; running %u a multiprocessor\n", wanted, why.c_str(),
                     fit);
      });
      groups = fit * sms;
    }
  }
  const QkvRope& r = l.qkv;
  const bool biases = r.bq.defined();
  const DecodeLayerParams params{.K = C, .I = I, .heads = H, .kv_heads = KV, .half_d = D / 2, .cache_rows = S,
                                 .slot = r.slot, .eps = l.eps, .flags = biases ? 1u : 0u,
                                 .nw1_type = uint32_t(float_index(l.input_norm.dtype())),
                                 .nw2_type = uint32_t(float_index(l.post_norm.dtype())), .scale = l.scale,
                                 .splits = splits, .groups = groups};
  rec.dispatch(kernel,
               {inout(l.x), in(l.input_norm), in(l.post_norm), in(r.wq), in(r.wk), in(r.wv),
                in(biases ? r.bq : r.wq), in(biases ? r.bk : r.wq), in(biases ? r.bv : r.wq), in(r.positions),
                in(r.inv_freq), in(r.offsets), inout(l.q), inout(l.k_cache), inout(l.v_cache), inout(part),
                inout(done), inout(l.attn), in(l.wo), in(l.w_gate), in(l.w_up), in(l.w_down), inout(l.gated),
                inout(sync)},
               params, {groups, 1, 1}, spec);
}

}  // namespace ls::ops
