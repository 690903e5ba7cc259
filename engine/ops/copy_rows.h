#pragma once
// Row copies whose start rows may come from the device, for programs recorded once and replayed at
// every position (docs/design.md: position and length in a device buffer, not in baked push constants).
// src and dst are viewed as matrices [rows, cols] of the same dtype and cols (row bytes a multiple of 4).
//   dst[dst_row0 + dst_off + r, :] = src[src_row0 + src_off + r, :]   for r < rows
// where src_off = offsets[src_slot] (or 0 when src_slot < 0), likewise dst_off; offsets is an i32 tensor
// the host writes between runs. Rows that would fall outside either tensor are skipped.
#include <cstdint>
#include <span>

#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

struct RowCopy {
  uint32_t rows = 0;           // 0: all of src's rows
  uint32_t src_row0 = 0, dst_row0 = 0;
  int32_t src_slot = -1, dst_slot = -1;
};

void copy_rows(vk::Recorder& rec, const Tensor& dst, const Tensor& src, const Tensor& offsets, const RowCopy& copy);

namespace ref {
void copy_rows(std::span<uint32_t> dst, std::span<const uint32_t> src, std::span<const int32_t> offsets,
               uint32_t words_per_row, const RowCopy& copy);
}  // namespace ref

}  // namespace ls::ops
