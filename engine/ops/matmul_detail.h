#pragma once
// ops/matmul.cpp's rules that another file needs as well: train/step_scratch.cpp walks a training step's
// products by them to size its scratch without a device.
#include <algorithm>
#include <cstdint>

namespace ls::ops::detail {

// Products with a side of at most this many outputs go to shaders/matmul_skinny.comp (its kMaxShort).
constexpr uint32_t kSkinnyMax = 16;
// Its ROWS_ALONG_K variant: a workgroup per kRows long indices, 1 to kSkinnyRowsMax, in one dimension of
// at most 65535 workgroups, summing subgroups of at least kSkinnyRowsMinSubgroup.
constexpr uint32_t kSkinnyRowsMax = 4;
constexpr uint32_t kSkinnyRowsMinSubgroup = 8;
constexpr uint32_t kSkinnyRowsMaxLong = 65535 * kSkinnyRowsMax;

// Whether a skinny product whose long operand (L indices) is contiguous along k (`rows_along_k`) takes the
// rows variant on a device of this subgroup size.
inline bool skinny_rows_fit(uint32_t L, bool rows_along_k, uint32_t subgroup_size) {
  return rows_along_k && L <= kSkinnyRowsMaxLong && subgroup_size >= kSkinnyRowsMinSubgroup;
}
// The rows variant's kRows: 1 to kSkinnyRowsMax long indices a workgroup, keeping at least 256 workgroups.
inline uint32_t skinny_rows(uint32_t L) { return std::clamp(L / 256, 1u, kSkinnyRowsMax); }

}  // namespace ls::ops::detail
