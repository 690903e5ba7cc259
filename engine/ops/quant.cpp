#include "ops/quant.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "ops/common.h"
#include "ops/matmul_detail.h"

namespace ls::ops {

namespace {

struct DequantParams {  // = `Params` in shaders/dequant.comp
  uint32_t first, n;
  float offset;
};
struct QuantMatvecParams {  // = `Params` in shaders/quant_matvec.comp
  uint32_t M, N, K;
  uint32_t a_sm, c_sm;
  uint32_t flags;
  float offset;
};
constexpr uint32_t kBias = 1, kAccumulate = 2;
constexpr uint32_t kThreads = 256, kMatvecMaxRows = 4;

// Bytes as an i32 tensor (padded with zeros to whole words).
Tensor upload_words(vk::Device& device, std::span<const uint8_t> bytes, const char* what) {
  std::vector<uint8_t> padded(std::max<size_t>(4, (bytes.size() + 3) / 4 * 4), 0);
  if (!bytes.empty()) std::memcpy(padded.data(), bytes.data(), bytes.size());
  Tensor t = Tensor::empty(device, {uint32_t(padded.size() / 4)}, DType::i32, what);
  upload_bytes(t, padded);
  return t;
}

Tensor upload_floats(vk::Device& device, std::span<const float> values, const char* what) {
  Tensor t = Tensor::empty(device, {uint32_t(std::max<size_t>(1, values.size()))}, DType::f32, what);
  if (values.empty())
    upload(t, std::vector<float>{0.0f});
  else
    upload(t, values);
  return t;
}

const vk::KernelFamily& dequant_family(QuantType t) {
  return t == QuantType::nf4 ? vk::family::dequant_nf4 : vk::family::dequant_q8;
}
const vk::KernelFamily& matvec_family(QuantType t) {
  return t == QuantType::nf4 ? vk::family::qmatvec_nf4 : vk::family::qmatvec_q8;
}
const vk::KernelFamily& matvec16_family(QuantType t) {
  return t == QuantType::nf4 ? vk::family::qmatvec16_nf4 : vk::family::qmatvec16_q8;
}
const vk::KernelFamily& matvec8_family(QuantType t) {
  return t == QuantType::nf4 ? vk::family::qmatvec8_nf4 : vk::family::qmatvec8_q8;
}

// shaders/quant_matvec16.comp's outputs a subgroup: the most of 4, 2, 1 that still leaves kMatvecMinSubgroups
// subgroups (two workgroups of 8 on each of an H100's 132 SMs); LORASTUDIO_QMATVEC_ROWS forces one (tuning).
constexpr uint32_t kMatvecMinSubgroups = 2048;
uint32_t matvec16_rows(uint32_t N) {
  static const uint32_t forced = [] {
    const char* v = std::getenv("LORASTUDIO_QMATVEC_ROWS");
    return v && *v ? std::clamp<uint32_t>(uint32_t(std::strtoul(v, nullptr, 10)), 1, 4) : 0u;
  }();
  if (forced) return forced;
  for (uint32_t rows : {4u, 2u})
    if (ceil_div(N, rows) >= kMatvecMinSubgroups) return rows;
  return 1;
}

// The few-row kernel. nf4: shaders/quant_matvec8.comp (pieces of 8 values, x read coalesced), any K a multiple of
// 8: on the H200 (session 21, s21d) the 7B o and down products took 29.9 us against 38.0 with the 16-byte kernel,
// decode 195.1 against 179.0 tok/s. q8: quant_matvec16.comp where K is a multiple of 64 (there it ran the 7B down
// product in 36.1 us against 41.7 as pieces, decode 221.3 against 216.0 tok/s, s21c/s21d), else pieces.
// Measurement: LORASTUDIO_QMATVEC=16 picks the earlier kernels for both formats (quant_matvec16.comp where K is a
// multiple of 64, else the one-word quant_matvec.comp); =1 the one-word kernel everywhere.
enum class MatvecKernel { pieces, wide, word };
MatvecKernel matvec_kernel(QuantType t, uint32_t K) {
  static const std::string forced = [] {
    const char* v = std::getenv("LORASTUDIO_QMATVEC");
    return std::string(v ? v : "");
  }();
  const bool whole_blocks = K % kQuantBlock == 0;
  if (forced == "1") return MatvecKernel::word;
  if (forced == "16") return whole_blocks ? MatvecKernel::wide : MatvecKernel::word;
  return t == QuantType::q8 && whole_blocks ? MatvecKernel::wide : MatvecKernel::pieces;
}

// shaders/quant_matvec8.comp's adjacent columns a subgroup: 2 for weights of 8M values or more. On the H200
// (session 22, s22c, profiled decode, the mean of o and down) the 7B nf4 products took 27.5 us with 2 against 32.3
// with 1 (decode 200.2 / 201.0 tok/s against 191.0 / 188.2), but the 0.5B shape's (0.8M and 4.4M values) 8.6
// against 8.0. The norm-fused products, tried the same way (s22a), lost at 7B: gate/up 83.6 against 69.6 us (94
// registers against 54). LORASTUDIO_QCOLS=1..4 forces it (measurement; the suite runs quant_op_test with 3).
uint32_t matvec8_cols(uint32_t N, uint32_t K) {
  static const uint32_t forced = [] {
    const char* v = std::getenv("LORASTUDIO_QCOLS");
    return v && *v ? uint32_t(std::clamp(std::atoi(v), 1, 4)) : 0u;
  }();
  constexpr uint64_t kTwoColumnsFrom = uint64_t(8) << 20;
  return forced ? forced : uint64_t(N) * K >= kTwoColumnsFrom ? 2u : 1u;
}

void require_quantized(const QuantWeight& q, const char* op) {
  require(q.defined() && q.codes.defined() && q.absmax.defined() && q.scales.defined() && q.map.defined(), op,
          "the weight is not a quantized weight");
}

}  // namespace

uint64_t QuantWeight::bytes() const {
  if (!defined()) return 0;
  return codes.bytes() + absmax.bytes() + (type == QuantType::nf4 ? scales.bytes() : 0);
}

Tensor upload_dynamic_map(vk::Device& device) { return upload_floats(device, dynamic_map_8bit(), "nf4 absmax map"); }

QuantWeight upload_quantized(vk::Device& device, const QuantizedHost& q, uint32_t rows, uint32_t cols,
                             const Tensor& map) {
  if (q.type == QuantType::none) throw Error("upload_quantized: the weight is not quantized");
  if (q.numel != uint64_t(rows) * cols)
    throw Error("upload_quantized: " + std::to_string(q.numel) + " values for a [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "] weight");
  QuantWeight w;
  w.type = q.type;
  w.rows = rows;
  w.cols = cols;
  w.offset = q.offset;
  w.codes = upload_words(device, q.codes, "quantized weight codes");
  if (q.type == QuantType::nf4) {
    w.absmax = upload_words(device, q.absmax_codes, "quantized weight absmax codes");
    w.scales = upload_floats(device, q.scales, "quantized weight absmax scales");
    w.map = map;
  } else {
    w.absmax = upload_floats(device, q.scales, "quantized weight scales");
    w.scales = w.absmax;  // placeholders: the q8 kernels do not read them
    w.map = w.absmax;
  }
  return w;
}

bool quant_in_gemm(bool coopmat2, uint32_t cols) {
  static const bool on = [] {
    const char* v = std::getenv("LORASTUDIO_QUANT_IN_GEMM");
    return v && std::string_view(v) == "1";
  }();
  return on && coopmat2 && cols % kQuantBlock == 0;
}

DType dequantized_dtype(const vk::Device& device) { return device.coopmat() ? DType::f16 : DType::f32; }

void dequantize_forward(vk::Recorder& rec, const Tensor& w, const QuantWeight& q, uint32_t row_begin) {
  const char* op = "dequantize_forward";
  require_quantized(q, op);
  require_dtype(w, {DType::f32, DType::f16, DType::bf16}, op, "w");
  require(w.cols() == q.cols && w.rows() + row_begin <= q.rows, op,
          "w is " + w.describe() + " for rows from " + std::to_string(row_begin) + " of a [" + std::to_string(q.rows) +
              ", " + std::to_string(q.cols) + "] weight");
  const vk::Kernel kernel = variant(dequant_family(q.type), {w.dtype()}, op);
  // Rows per dispatch so that the output binding fits the device's limit, in multiples of the rows whose
  // bytes keep every part's offset aligned.
  const uint64_t limit = rec.device().report().max_storage_range;
  const uint64_t row_bytes = uint64_t(q.cols) * dtype_size(w.dtype());
  const uint64_t align = std::max<uint64_t>(rec.device().report().storage_alignment, 4);
  const uint64_t granule = align / std::gcd(align, row_bytes);
  uint64_t chunk = w.rows();
  if (chunk * row_bytes > limit) chunk = limit / row_bytes / granule * granule;
  require(chunk > 0, op, "rows of " + std::to_string(row_bytes) + " bytes do not fit one binding of " +
                             std::to_string(limit) + " bytes in aligned parts");
  for (uint64_t r0 = 0; r0 < w.rows(); r0 += chunk) {
    const uint64_t n_rows = std::min<uint64_t>(chunk, w.rows() - r0);
    const Tensor part = n_rows == w.rows() ? w : w.slice_rows(r0, r0 + n_rows);
    const uint64_t n = n_rows * q.cols;
    rec.dispatch(kernel, {in(q.codes), in(q.absmax), in(q.scales), in(q.map), out(part)},
                 DequantParams{.first = uint32_t((row_begin + r0) * q.cols), .n = uint32_t(n), .offset = q.offset},
                 {std::min<uint32_t>(ceil_div(ceil_div(n, 8), kThreads), 8192), 1, 1}, {.local_x = kThreads});
  }
}

Tensor dequantize_to_scratch(vk::Recorder& rec, const QuantWeight& q) {
  const DType dtype = dequantized_dtype(rec.device());
  const uint64_t bytes = uint64_t(q.rows) * q.cols * dtype_size(dtype);
  Tensor w = Tensor::view(rec.device(), rec.scratch(bytes, vk::Recorder::kScratchWeight), {q.rows, q.cols}, dtype);
  vk::Recorder::Label label(rec, "dequantize");
  dequantize_forward(rec, w, q);
  return w;
}

bool quant_matvec_fits(const Tensor& x, const QuantWeight& q) {
  return x.defined() && x.rows() <= kMatvecMaxRows && q.cols % 8 == 0 && x.cols() == q.cols;
}

void quant_matvec_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const QuantWeight& q,
                          const Tensor& bias, bool accumulate) {
  const char* op = "quant_matvec_forward";
  require_quantized(q, op);
  require_dtype(x, {DType::f32, DType::f16}, op, "x");
  require_dtype(y, {DType::f32, DType::f16}, op, "y");
  require(quant_matvec_fits(x, q), op,
          "x is " + x.describe() + "; expected at most 4 rows of " + std::to_string(q.cols) + " (a multiple of 8)");
  const uint32_t M = uint32_t(x.rows()), N = q.rows, K = q.cols;
  require(y.rows() == M && y.cols() == N, op, "y is " + y.describe() + " for x " + x.describe());
  const DType wt = dequantized_dtype(rec.device());
  if (bias.defined()) require_dtype(bias, {wt}, op, "bias");
  require(!bias.defined() || bias.numel() == N, op, "bias is " + bias.describe());
  const MatvecKernel which = matvec_kernel(q.type, K);
  const vk::Kernel kernel = variant(which == MatvecKernel::pieces ? matvec8_family(q.type)
                                    : which == MatvecKernel::wide ? matvec16_family(q.type)
                                                                  : matvec_family(q.type),
                                    {x.dtype(), wt, y.dtype()}, op);
  const Tensor& b = bias.defined() ? bias : q.absmax;  // a placeholder binding when there is no bias
  const uint32_t sg = std::max(1u, rec.device().report().subgroup_size), per_group = std::max(1u, kThreads / sg);
  vk::Spec spec{.local_x = kThreads};
  uint32_t groups = 0;
  if (which == MatvecKernel::pieces) {
    // kSplit subgroups a group of kCols columns (the kernel's 2 pieces a lane a step count as one)
    const uint32_t cols = matvec8_cols(N, K), column_groups = ceil_div(N, cols);
    // LORASTUDIO_QMATVEC8_GROUPS=n asks for n workgroups instead of detail::kMatvecMinGroups (measurement)
    static const uint32_t want = env_clamped("LORASTUDIO_QMATVEC8_GROUPS", 1, 1 << 16, detail::kMatvecMinGroups);
    const uint32_t split = detail::matvec_split(column_groups, std::max(8u, K / 2), sg, per_group, want);
    spec.constants = {split, cols, detail::rows_constant(M),
                      detail::nf4_piece_words(detail::PiecesOf::matvec8, K, {&q})};
    groups = ceil_div(column_groups, per_group / split);
  } else {
    const uint32_t rows = which == MatvecKernel::wide ? matvec16_rows(N) : 1;  // outputs a subgroup
    if (which == MatvecKernel::wide) spec.constants = {rows};
    groups = ceil_div(ceil_div(N, rows), per_group);
  }
  rec.dispatch(kernel, {in(x), accumulate ? inout(y) : out(y), in(b), in(q.codes), in(q.absmax), in(q.scales), in(q.map)},
               QuantMatvecParams{.M = M, .N = N, .K = K, .a_sm = K, .c_sm = N,
                                 .flags = (bias.defined() ? kBias : 0) | (accumulate ? kAccumulate : 0),
                                 .offset = q.offset},
               {std::min<uint32_t>(groups, 65535), ceil_div(groups, 65535), 1}, spec);
}

void quant_linear_forward(vk::Recorder& rec, const Tensor& y, const Tensor& x, const QuantWeight& q, const Tensor& bias,
                          bool accumulate) {
  if (quant_matvec_fits(x, q)) return quant_matvec_forward(rec, y, x, q, bias, accumulate);
  matmul_forward(rec, y, x, q, bias, accumulate);
}

void quant_lora_forward(vk::Recorder& rec, const Tensor& y, const Tensor& t, const Tensor& x, const QuantWeight& q,
                        const Tensor& bias, const Tensor& lora_a, const Tensor& lora_b, float scale,
                        const LoraDropout& dropout, bool accumulate) {
  if (dropout.active() || !quant_matvec_fits(x, q))
    return lora_forward(rec, y, t, x, q, bias, lora_a, lora_b, scale, dropout, accumulate);
  const char* op = "quant_lora_forward";
  require_dtype(lora_a, {DType::f32}, op, "lora_a");
  require_dtype(lora_b, {DType::f32}, op, "lora_b");
  const uint32_t M = uint32_t(x.rows()), r = lora_a.dim(0);
  require_shape(lora_a, {r, q.cols}, op, "lora_a");
  require_shape(lora_b, {q.rows, r}, op, "lora_b");
  require_shape(t, {M, r}, op, "t");
  quant_matvec_forward(rec, y, x, q, bias, accumulate);
  vk::Recorder::Label label(rec, "lora");
  matmul_forward(rec, t, x, lora_a, Tensor());
  // y += scale · t·Bᵀ
  matmul_strided(rec, y, t, lora_b,
                 {.M = M, .N = q.rows, .K = r, .a_sm = r, .a_sk = 1, .b_sn = r, .b_sk = 1, .c_sm = q.rows,
                  .alpha = scale, .beta = 1, .accumulate = true});
}

}  // namespace ls::ops
