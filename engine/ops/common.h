#pragma once
// Helpers every op uses: input checks that throw ls::Error naming the op and the shapes, and the
// workgroup-count arithmetic. Ops are free functions `<op>_forward(rec, outputs..., inputs..., params)`
// and `<op>_backward(rec, d_inputs..., d_outputs, saved...)` (llm.c order: outputs first).
#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>

#include "error.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

inline uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

// A measurement switch: the environment variable's number clamped to [lo, hi], or `otherwise` when it is unset.
inline uint32_t env_clamped(const char* name, int lo, int hi, uint32_t otherwise) {
  const char* v = std::getenv(name);
  return v ? uint32_t(std::clamp(std::atoi(v), lo, hi)) : otherwise;
}

// One workgroup per row, grid-stride over rows past 65535 (the kernels loop over their rows).
inline vk::Groups grid_stride_rows(uint64_t rows) { return {uint32_t(std::min<uint64_t>(rows, 65535)), 1, 1}; }
// Threads of a one-workgroup-per-row kernel: wider for longer rows (a vocabulary row has ~150k columns).
inline uint32_t row_threads_for(uint32_t cols) { return cols <= 128 ? 64 : cols <= 4096 ? 256 : 1024; }

[[noreturn]] inline void fail(const char* op, const std::string& what) { throw Error(std::string(op) + ": " + what); }

inline void require(bool ok, const char* op, const std::string& what) {
  if (!ok) fail(op, what);
}

inline void require_defined(const Tensor& t, const char* op, const char* name) {
  if (!t.defined()) fail(op, std::string(name) + " is an empty tensor");
}

inline void require_dtype(const Tensor& t, std::initializer_list<DType> allowed, const char* op, const char* name) {
  require_defined(t, op, name);
  for (DType d : allowed)
    if (t.dtype() == d) return;
  std::string list;
  for (DType d : allowed) list += std::string(list.empty() ? "" : ", ") + dtype_name(d);
  fail(op, std::string(name) + " is " + t.describe() + "; expected dtype " + list);
}

inline void require_shape(const Tensor& t, const Shape& want, const char* op, const char* name) {
  require_defined(t, op, name);
  if (t.shape() != want) fail(op, std::string(name) + " is " + t.describe() + "; expected shape " + shape_string(want));
}

inline void require_numel(const Tensor& t, uint64_t n, const char* op, const char* name) {
  require_defined(t, op, name);
  if (t.numel() != n)
    fail(op, std::string(name) + " is " + t.describe() + "; expected " + std::to_string(n) + " elements");
}

// t as rows [..., C] (N = the product of the other dimensions), none of them empty, with 32-bit element
// indices in the kernels.
inline void require_matrix(const Tensor& t, const char* op, const char* name) {
  require(t.rank() >= 1 && t.cols() > 0 && t.rows() > 0, op,
          std::string(name) + " is " + t.describe() + "; expected [..., V] with no empty dimension");
  require(t.numel() <= std::numeric_limits<uint32_t>::max(), op,
          std::string(name) + " is " + t.describe() + "; more than 2^32 - 1 elements");
}

// t holds one value of `dtype` per row.
inline void require_row_vector(const Tensor& t, DType dtype, uint64_t rows, const char* op, const char* name) {
  require_dtype(t, {dtype}, op, name);
  require_numel(t, rows, op, name);
}

// Index into a {f32, f16, bf16} table of kernel variants.
inline size_t float_index(DType d) {
  switch (d) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
    default: return 3;
  }
}

// The kernel of `family` (vk::family::<name>, generated from the kernel tables) for these storage types,
// in the order its kernel names give them; an error naming the op when the family has no such variant.
inline vk::Kernel variant(const vk::KernelFamily& family, std::initializer_list<DType> types, const char* op) {
  uint32_t index[4] = {};
  size_t n = 0;
  for (DType t : types) index[std::min<size_t>(n++, 3)] = uint32_t(float_index(t));
  const vk::Kernel k = n <= 4 ? vk::variant(family, std::span<const uint32_t>(index, n)) : vk::Kernel::count_;
  if (k == vk::Kernel::count_) {
    std::string list;
    for (DType t : types) list += std::string(list.empty() ? "" : " x ") + dtype_name(t);
    fail(op, std::string("no ") + family.name + " kernel for " + list);
  }
  return k;
}

}  // namespace ls::ops
