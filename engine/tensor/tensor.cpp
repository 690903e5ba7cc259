#include "tensor/tensor.h"

#include <cstring>

#include "error.h"

namespace ls {

namespace {
template <class Dims>
std::string bracketed(const Dims& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

std::string shape_string(const Shape& s) { return bracketed(s); }
std::string shape_string(const std::vector<uint64_t>& s) { return bracketed(s); }

Tensor Tensor::empty(vk::Device& device, Shape shape, DType dtype, const char* what) {
  Tensor t;
  t.device_ = &device;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.alloc_ = device.memory().allocate(t.bytes(), what);
  return t;
}

Tensor Tensor::view(vk::Device& device, std::shared_ptr<vk::Allocation> alloc, Shape shape, DType dtype) {
  Tensor t;
  t.device_ = &device;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  if (!alloc || alloc->size() < t.bytes()) throw Error("Tensor::view: " + t.describe() + " does not fit the allocation");
  t.alloc_ = std::move(alloc);
  return t;
}

Tensor Tensor::empty_host(vk::Device& device, Shape shape, DType dtype, const char* what) {
  Tensor t;
  t.device_ = &device;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  (void)what;
  t.alloc_ = device.memory().allocate_staging(t.bytes());
  return t;
}

void* Tensor::mapped() const {
  if (!alloc_ || !alloc_->mapped()) return nullptr;
  return static_cast<char*>(alloc_->mapped()) + offset_;
}

uint32_t Tensor::dim(int i) const {
  int r = int(shape_.size());
  int k = i < 0 ? r + i : i;
  if (k < 0 || k >= r) throw Error("tensor " + describe() + ": no dimension " + std::to_string(i));
  return shape_[size_t(k)];
}

uint64_t Tensor::numel() const {
  uint64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

uint64_t Tensor::rows() const {
  uint64_t n = 1;
  for (size_t i = 0; i + 1 < shape_.size(); ++i) n *= shape_[i];
  return n;
}

std::string Tensor::describe() const { return shape_string(shape_) + " " + dtype_name(dtype_); }

Tensor Tensor::reshape(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  if (t.numel() != numel()) throw Error("reshape " + describe() + " to " + shape_string(t.shape_) + ": sizes differ");
  return t;
}

Tensor Tensor::slice_rows(uint64_t begin, uint64_t end) const {
  if (begin > end || end > rows())
    throw Error("slice_rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + describe());
  Tensor t = *this;
  t.shape_ = {uint32_t(end - begin), cols()};
  t.offset_ = offset_ + begin * cols() * dtype_size(dtype_);
  return t;
}

vk::BufferRange Tensor::range() const { return {alloc_, offset_, bytes()}; }

void upload_bytes(const Tensor& t, std::span<const uint8_t> bytes) {
  if (bytes.size() != t.bytes())
    throw Error("upload of " + std::to_string(bytes.size()) + " bytes into " + t.describe());
  t.device().write(*t.range().alloc, t.byte_offset(), bytes.data(), bytes.size());
}

void upload(const Tensor& t, std::span<const float> v) {
  if (v.size() != t.numel())
    throw Error("upload of " + std::to_string(v.size()) + " values into " + t.describe());
  std::vector<uint8_t> bytes(t.bytes());
  switch (t.dtype()) {
    case DType::f32: std::memcpy(bytes.data(), v.data(), bytes.size()); break;
    case DType::f16:
    case DType::bf16:
      for (size_t i = 0; i < v.size(); ++i) {
        uint16_t h = t.dtype() == DType::f16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
      break;
    case DType::i32: throw Error("upload of floats into an i32 tensor " + t.describe());
  }
  upload_bytes(t, bytes);
}

void upload(const Tensor& t, std::span<const int32_t> v) {
  if (t.dtype() != DType::i32) throw Error("upload of ints into " + t.describe());
  if (v.size() != t.numel()) throw Error("upload of " + std::to_string(v.size()) + " values into " + t.describe());
  upload_bytes(t, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
}

std::vector<uint8_t> download_bytes(const Tensor& t) {
  std::vector<uint8_t> bytes(t.bytes());
  t.device().read(*t.range().alloc, t.byte_offset(), bytes.data(), bytes.size());
  return bytes;
}

std::vector<float> download(const Tensor& t) {
  auto bytes = download_bytes(t);
  std::vector<float> v(t.numel());
  switch (t.dtype()) {
    case DType::f32: std::memcpy(v.data(), bytes.data(), bytes.size()); break;
    case DType::f16:
    case DType::bf16:
      for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(reinterpret_cast<const std::byte*>(bytes.data()), t.dtype(), i);
      break;
    case DType::i32:
      for (size_t i = 0; i < v.size(); ++i) {
        int32_t x;
        std::memcpy(&x, bytes.data() + 4 * i, 4);
        v[i] = float(x);
      }
      break;
  }
  return v;
}

std::vector<int32_t> download_i32(const Tensor& t) {
  if (t.dtype() != DType::i32) throw Error("download_i32 of " + t.describe());
  auto bytes = download_bytes(t);
  std::vector<int32_t> v(t.numel());
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

}  // namespace ls
