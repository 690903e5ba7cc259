#include "ops/embedding.h"

#include <algorithm>
#include <numeric>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct EmbeddingParams {  // = `Params` in shaders/embedding.comp
  uint32_t tokens;
  uint32_t cols;
  int32_t r0, r1;
  int32_t vocab;
};
static_assert(sizeof(EmbeddingParams) <= 128);

struct EmbeddingBackwardParams {  // = `Params` in shaders/embedding_backward.comp
  uint32_t tokens;
  uint32_t cols;
  int32_t r0, r1;
};
static_assert(sizeof(EmbeddingBackwardParams) <= 128);

constexpr uint32_t kThreads = 256;

// The rows of a [V, C] table that one dispatch binds: as many as fit one storage-buffer binding (and
// max_chunk_bytes), a multiple of the row count that keeps every chunk's start aligned to
// minStorageBufferOffsetAlignment.
uint32_t rows_per_chunk(const Tensor& table, const vk::DeviceReport& report, uint64_t max_chunk_bytes, const char* op) {
  const uint64_t row_bytes = uint64_t(table.cols()) * dtype_size(table.dtype());
  const uint64_t alignment = std::max<uint64_t>(report.storage_alignment, 1);
  const uint64_t step = alignment / std::gcd(row_bytes, alignment);
  uint64_t limit = report.max_storage_range;
  if (max_chunk_bytes) limit = std::min(limit, max_chunk_bytes);
  const uint64_t rows = std::max(limit / row_bytes / step * step, step);
  require(rows * row_bytes <= report.max_storage_range, op,
          "table " + table.describe() + ": " + std::to_string(step) + " rows of " + std::to_string(row_bytes) +
              " bytes (the smallest aligned chunk) exceed maxStorageBufferRange " +
              std::to_string(report.max_storage_range));
  return uint32_t(std::min<uint64_t>(rows, table.dim(0)));
}

// ids' shape followed by C.
Shape rows_shape(const Tensor& ids, uint32_t cols) {
  Shape s = ids.shape();
  s.push_back(cols);
  return s;
}

vk::Groups token_groups(uint64_t tokens) { return {uint32_t(std::min<uint64_t>(tokens, 65535)), 1, 1}; }

// embedding_forward and gather_rows: y[t, :] = table[ids[t], :], the op and its operands named as the
// caller names them.
struct GatherNames {
  const char *op, *y, *table, *ids;
};

void gather(vk::Recorder& rec, const Tensor& y, const Tensor& table, const Tensor& ids, uint64_t max_chunk_bytes,
            const GatherNames& n) {
  const char* op = n.op;
  require_dtype(table, {DType::f32, DType::f16, DType::bf16}, op, n.table);
  require(table.rank() == 2 && table.numel() > 0, op,
          std::string(n.table) + " is " + table.describe() + "; expected [V, C], V, C > 0");
  require_dtype(ids, {DType::i32}, op, n.ids);
  require_dtype(y, {DType::f32, DType::f16, DType::bf16}, op, n.y);
  require_shape(y, rows_shape(ids, table.cols()), op, n.y);
  require(table.dim(0) <= uint32_t(INT32_MAX), op, std::string(n.table) + " " + table.describe() + " has too many rows");

  using K = vk::Kernel;
  static constexpr K kernels[3][3] = {{K::embedding_f32_to_f32, K::embedding_f32_to_f16, K::embedding_f32_to_bf16},
                                      {K::embedding_f16_to_f32, K::embedding_f16_to_f16, K::embedding_f16_to_bf16},
                                      {K::embedding_bf16_to_f32, K::embedding_bf16_to_f16, K::embedding_bf16_to_bf16}};
  const K kernel = kernels[float_index(table.dtype())][float_index(y.dtype())];
  const uint32_t vocab = table.dim(0), chunk = rows_per_chunk(table, rec.device().report(), max_chunk_bytes, op);
  for (uint32_t r0 = 0; r0 < vocab; r0 += chunk) {
    const uint32_t r1 = std::min(vocab, r0 + chunk);
    rec.dispatch(kernel, {in(table.slice_rows(r0, r1)), in(ids), out(y)},
                 EmbeddingParams{.tokens = uint32_t(ids.numel()),
                                 .cols = table.cols(),
                                 .r0 = int32_t(r0),
                                 .r1 = int32_t(r1),
                                 .vocab = int32_t(vocab)},
                 token_groups(ids.numel()), {.local_x = kThreads});
  }
}
}  // namespace

void embedding_forward(vk::Recorder& rec, const Tensor& y, const Tensor& table, const Tensor& ids,
                       uint64_t max_chunk_bytes) {
  gather(rec, y, table, ids, max_chunk_bytes, {.op = "embedding_forward", .y = "y", .table = "table", .ids = "ids"});
}

void gather_rows(vk::Recorder& rec, const Tensor& dst, const Tensor& src, const Tensor& rows) {
  gather(rec, dst, src, rows, 0, {.op = "gather_rows", .y = "dst", .table = "src", .ids = "rows"});
}

void embedding_backward(vk::Recorder& rec, const Tensor& dtable, const Tensor& dy, const Tensor& ids,
                        uint64_t max_chunk_bytes) {
  const char* op = "embedding_backward";
  require_dtype(dtable, {DType::f32}, op, "dtable");
  require(dtable.rank() == 2 && dtable.numel() > 0, op,
          "dtable is " + dtable.describe() + "; expected [V, C], V, C > 0");
  require_dtype(ids, {DType::i32}, op, "ids");
  require_dtype(dy, {DType::f32, DType::f16, DType::bf16}, op, "dy");
  require_shape(dy, rows_shape(ids, dtable.cols()), op, "dy");
  require(dtable.dim(0) <= uint32_t(INT32_MAX), op, "dtable " + dtable.describe() + " has too many rows");

  const vk::Kernel kernel = variant(vk::family::embedding_backward, {dy.dtype()}, op);
  const uint32_t vocab = dtable.dim(0), chunk = rows_per_chunk(dtable, rec.device().report(), max_chunk_bytes, op);
  for (uint32_t r0 = 0; r0 < vocab; r0 += chunk) {
    const uint32_t r1 = std::min(vocab, r0 + chunk);
    rec.dispatch(kernel, {in(dy), in(ids), inout(dtable.slice_rows(r0, r1))},
                 EmbeddingBackwardParams{
                     .tokens = uint32_t(ids.numel()), .cols = dtable.cols(), .r0 = int32_t(r0), .r1 = int32_t(r1)},
                 token_groups(ids.numel()), {.local_x = kThreads});
  }
}

namespace ref {
namespace {
template <class F>
void forward(std::span<F> y, std::span<const F> table, std::span<const int32_t> ids, uint32_t cols) {
  const int64_t vocab = int64_t(table.size() / cols);
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t c = 0; c < cols; ++c)
      y[t * cols + c] = ids[t] >= 0 && ids[t] < vocab ? table[size_t(ids[t]) * cols + c] : F(0);
}

template <class F>
void backward(std::span<F> dtable, std::span<const F> dy, std::span<const int32_t> ids, uint32_t cols) {
  const int64_t vocab = int64_t(dtable.size() / cols);
  for (size_t t = 0; t < ids.size(); ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= vocab || std::find(ids.begin(), ids.begin() + ptrdiff_t(t), id) != ids.begin() + ptrdiff_t(t))
      continue;  // out of range, or summed at the id's first token
    for (size_t c = 0; c < cols; ++c) {
      F sum = 0;
      for (size_t u = t; u < ids.size(); ++u)
        if (ids[u] == id) sum += dy[u * cols + c];
      dtable[size_t(id) * cols + c] += sum;
    }
  }
}
}  // namespace

void embedding_forward(std::span<float> y, std::span<const float> table, std::span<const int32_t> ids, uint32_t cols) {
  forward(y, table, ids, cols);
}
void embedding_forward(std::span<double> y, std::span<const double> table, std::span<const int32_t> ids,
                       uint32_t cols) {
  forward(y, table, ids, cols);
}
void embedding_backward(std::span<float> dtable, std::span<const float> dy, std::span<const int32_t> ids,
                        uint32_t cols) {
  backward(dtable, dy, ids, cols);
}
void embedding_backward(std::span<double> dtable, std::span<const double> dy, std::span<const int32_t> ids,
                        uint32_t cols) {
  backward(dtable, dy, ids, cols);
}
}  // namespace ref

}  // namespace ls::ops
