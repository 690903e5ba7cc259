#pragma once
// Tensor = a byte range of a device allocation + shape + dtype. Row-major, contiguous. Copies share
// the allocation (like a view); the memory is freed when the last tensor or program using it goes.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "vk/device.h"
#include "vk/recorder.h"

namespace ls {

using Shape = std::vector<uint32_t>;
std::string shape_string(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(vk::Device& device, Shape shape, DType dtype, const char* what = "tensor");
  // In host-visible, coherent memory that kernels read directly: for the few values a replayed program
  // takes per run (positions, lengths, token ids) and for results the host reads at once (logits).
  static Tensor empty_host(vk::Device& device, Shape shape, DType dtype, const char* what = "host tensor");

  // A tensor over the first bytes of an existing allocation (e.g. vk::Recorder::scratch).
  static Tensor view(vk::Device& device, std::shared_ptr<vk::Allocation> alloc, Shape shape, DType dtype);

  bool defined() const { return alloc_ != nullptr; }
  vk::Device& device() const { return *device_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  size_t rank() const { return shape_.size(); }
  // dim(-1) is the last dimension.
  uint32_t dim(int i) const;
  uint64_t numel() const;
  uint64_t bytes() const { return numel() * dtype_size(dtype_); }
  // As a matrix: rows = product of all dimensions but the last, cols = the last.
  uint64_t rows() const;
  uint32_t cols() const { return shape_.empty() ? 1 : shape_.back(); }
  // "[3, 4] f32"
  std::string describe() const;

  // Same elements, another shape (numel must match).
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) of the matrix view, as a tensor of shape [end - begin, cols].
  Tensor slice_rows(uint64_t begin, uint64_t end) const;
  uint64_t byte_offset() const { return offset_; }
  // The tensor's bytes when its memory is host-visible (empty_host, or any tensor on a device whose
  // memory is all host-visible), else nullptr. Write them only while no submitted program uses them.
  void* mapped() const;

  vk::BufferRange range() const;

 private:
  std::shared_ptr<vk::Allocation> alloc_;
  vk::Device* device_ = nullptr;
  uint64_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::f32;
};

inline vk::Use in(const Tensor& t) { return {t.range(), vk::Access::read}; }
inline vk::Use out(const Tensor& t) { return {t.range(), vk::Access::write}; }
inline vk::Use inout(const Tensor& t) { return {t.range(), vk::Access::read_write}; }

// Host transfers. Floats are converted to the tensor's dtype (f32, f16, bf16); i32 tensors take ints.
void upload(const Tensor& t, std::span<const float> values);
void upload(const Tensor& t, std::span<const int32_t> values);
void upload_bytes(const Tensor& t, std::span<const uint8_t> bytes);
std::vector<float> download(const Tensor& t);
std::vector<int32_t> download_i32(const Tensor& t);
std::vector<uint8_t> download_bytes(const Tensor& t);

}  // namespace ls
