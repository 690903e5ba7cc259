#include "ops/copy_rows.h"

#include <algorithm>
#include <string>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct CopyRowsParams {  // = `Params` in shaders/copy_rows.comp
  uint32_t rows, words, src_rows, dst_rows, src_row0, dst_row0;
  int32_t src_slot, dst_slot;
};
static_assert(sizeof(CopyRowsParams) <= 128);
constexpr uint32_t kThreads = 256;
}  // namespace

void copy_rows(vk::Recorder& rec, const Tensor& dst, const Tensor& src, const Tensor& offsets, const RowCopy& c) {
  const char* op = "copy_rows";
  require_defined(dst, op, "dst");
  require_defined(src, op, "src");
  require(dst.dtype() == src.dtype() && dst.cols() == src.cols(), op,
          "dst " + dst.describe() + " and src " + src.describe() + " differ in dtype or row length");
  const uint64_t row_bytes = uint64_t(src.cols()) * dtype_size(src.dtype());
  require(row_bytes % 4 == 0 && row_bytes > 0, op, "rows of " + src.describe() + " are not a whole number of 32-bit words");
  const uint32_t rows = c.rows ? c.rows : uint32_t(src.rows());
  require(c.src_slot < 0 || offsets.defined(), op, "a source slot needs an offsets tensor");
  require(c.dst_slot < 0 || offsets.defined(), op, "a destination slot needs an offsets tensor");
  if (offsets.defined()) {
    require_dtype(offsets, {DType::i32}, op, "offsets");
    require(std::max(c.src_slot, c.dst_slot) < int32_t(offsets.numel()), op,
            "slot past the end of offsets " + offsets.describe());
  }
  if (rows == 0) return;
  const uint32_t words = uint32_t(row_bytes / 4);
  CopyRowsParams params{.rows = rows, .words = words, .src_rows = uint32_t(src.rows()), .dst_rows = uint32_t(dst.rows()),
                        .src_row0 = c.src_row0, .dst_row0 = c.dst_row0, .src_slot = c.src_slot, .dst_slot = c.dst_slot};
  const Tensor& offs = offsets.defined() ? offsets : src;  // an unread binding still needs a buffer
  rec.dispatch(vk::Kernel::copy_rows, {in(src), out(dst), in(offs)}, params,
               {std::min<uint32_t>(ceil_div(uint64_t(rows) * words, kThreads), 4096), 1, 1}, {.local_x = kThreads});
}

namespace ref {
void copy_rows(std::span<uint32_t> dst, std::span<const uint32_t> src, std::span<const int32_t> offsets,
               uint32_t words, const RowCopy& c) {
  const uint64_t src_rows = src.size() / words, dst_rows = dst.size() / words;
  const uint64_t rows = c.rows ? c.rows : src_rows;
  const uint64_t s0 = c.src_row0 + (c.src_slot >= 0 ? uint64_t(std::max(offsets[size_t(c.src_slot)], 0)) : 0);
  const uint64_t d0 = c.dst_row0 + (c.dst_slot >= 0 ? uint64_t(std::max(offsets[size_t(c.dst_slot)], 0)) : 0);
  for (uint64_t r = 0; r < rows; ++r)
    if (s0 + r < src_rows && d0 + r < dst_rows)
      std::copy_n(src.begin() + (s0 + r) * words, words, dst.begin() + (d0 + r) * words);
}
}  // namespace ref

}  // namespace ls::ops
